package harness

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// Three caches, each keyed by everything that decides its value: whole
// evaluations (SQLite), torch.compile timings of a reference (memory and
// SQLite, baseline.go: ~10 s each on the H100 box) and traced work counts (memory: a
// trace is a cold Python start).

func migrateEvalCache(db *sql.DB) error {
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS eval_cache (
		key TEXT PRIMARY KEY,
		harness_version TEXT NOT NULL,
		verdict TEXT NOT NULL,
		result TEXT NOT NULL,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
	)`)
	if err != nil {
		return fmt.Errorf("migrate eval_cache: %w", err)
	}
	if err := migrateBaselines(db); err != nil {
		return err
	}
	return migrateEvalCost(db)
}

func hashFields(fields ...any) string {
	h := sha256.New()
	for _, f := range fields {
		b, _ := json.Marshal(f)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cacheKey hashes everything that decides a result.
func cacheKey(refCode, candCode, target, device string, req EvalRequest) string {
	return hashFields(HarnessVersion(), target, device, refCode, candCode, req.Trials, req.Seed,
		req.SkipTiming, req.Tolerance, req.SOLSeconds, req.Shapes, req.Work, req.CountWork, req.KernelPolicy, toleranceRule(req.ToleranceRule))
}

// workKey names a reference's traced work.
func workKey(refCode, shapes string) string { return hashFields(refCode, shapes) }

// compileGet is the reference's stored torch.compile baseline while it is
// fresh: this evaluator's own, else the database's.
func (e *Evaluator) compileGet(ctx context.Context, key string) *baseline {
	e.compileMu.Lock()
	b := e.compileStats[key]
	e.compileMu.Unlock()
	if b != nil || e.cfg.DB == nil {
		return freshOrNil(e, b)
	}
	var js, at, where string
	var measureS float64
	err := e.cfg.DB.QueryRowContext(ctx, `SELECT stats, measured_at, measured_where, measure_s FROM baseline_timing WHERE kind = ? AND key = ?`,
		BaselineTorchCompile, key).Scan(&js, &at, &where, &measureS)
	if err != nil {
		return nil
	}
	var st Stats
	t, terr := time.Parse(time.RFC3339Nano, at)
	if json.Unmarshal([]byte(js), &st) != nil || terr != nil {
		return nil
	}
	b = &baseline{Stats: &st, MeasuredAt: t, Where: where, MeasureS: measureS}
	e.compileMu.Lock()
	e.compileStats[key] = b
	e.compileMu.Unlock()
	return freshOrNil(e, b)
}

func freshOrNil(e *Evaluator, b *baseline) *baseline {
	if !e.fresh(b) {
		return nil
	}
	return b
}

// claimCompile says whether the caller should measure the compile timing
// of key: no other evaluation in flight is. A search's first evaluations
// start together; each compiling and timing torch.compile of the same
// reference inside its device phase held the device for 18 s each.
func (e *Evaluator) claimCompile(key string) bool {
	e.compileMu.Lock()
	defer e.compileMu.Unlock()
	if e.compileBusy[key] {
		return false
	}
	e.compileBusy[key] = true
	return true
}

// unclaimCompile ends r's claim, whatever its outcome: a failed
// evaluation leaves the measurement to the next one.
func (e *Evaluator) unclaimCompile(r *evalRun) {
	if !r.compileClaimed {
		return
	}
	e.compileMu.Lock()
	delete(e.compileBusy, r.rkey)
	e.compileMu.Unlock()
}

// compileMeasured is the compile baseline this evaluator measured for key,
// not one read from the database.
func (e *Evaluator) compileMeasured(key string) *baseline {
	e.compileMu.Lock()
	defer e.compileMu.Unlock()
	if !e.compileOwn[key] {
		return nil
	}
	return freshOrNil(e, e.compileStats[key])
}

// compilePut keeps a baseline measured now, with what measuring it cost.
func (e *Evaluator) compilePut(ctx context.Context, key string, b *baseline) {
	e.compileMu.Lock()
	e.compileStats[key] = b
	e.compileOwn[key] = true
	e.compileMu.Unlock()
	if e.cfg.DB == nil {
		return
	}
	_, err := e.cfg.DB.ExecContext(ctx, `INSERT OR REPLACE INTO baseline_timing (kind, key, stats, measured_at, measured_where, measure_s) VALUES (?, ?, ?, ?, ?, ?)`,
		BaselineTorchCompile, key, encodeStats(b.Stats), b.MeasuredAt.UTC().Format(time.RFC3339Nano), b.Where, b.MeasureS)
	if err != nil {
		e.log.Warn("baseline store write", "err", err)
	}
}

func (e *Evaluator) cacheGet(ctx context.Context, key string) *EvalResult {
	if e.cfg.DB == nil {
		return nil
	}
	var s string
	err := e.cfg.DB.QueryRowContext(ctx, `SELECT result FROM eval_cache WHERE key = ?`, key).Scan(&s)
	if err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			e.log.Warn("eval cache read", "err", err)
		}
		return nil
	}
	var r EvalResult
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		e.log.Warn("eval cache decode", "err", err)
		return nil
	}
	return &r
}

func (e *Evaluator) cachePut(ctx context.Context, key string, r *EvalResult) {
	if e.cfg.DB == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	_, err = e.cfg.DB.ExecContext(ctx, `INSERT OR REPLACE INTO eval_cache (key, harness_version, verdict, result) VALUES (?, ?, ?, ?)`,
		key, r.HarnessVersion, r.Verdict, string(b))
	if err != nil {
		e.log.Warn("eval cache write", "err", err)
	}
}

// tracedWork returns a reference's traced work, tracing once per
// reference and shape set; concurrent callers share one trace.
func (e *Evaluator) tracedWork(ctx context.Context, key string, trace func(context.Context) (sol.Work, error)) (sol.Work, error) {
	e.workMu.Lock()
	c := e.work[key]
	if c == nil {
		c = &workCall{done: make(chan struct{})}
		e.work[key] = c
		e.workMu.Unlock()
		c.w, c.err = trace(ctx)
		if c.err != nil { // a failed trace (deadline, a flaky box) is tried again next time
			e.workMu.Lock()
			delete(e.work, key)
			e.workMu.Unlock()
		}
		close(c.done)
	} else {
		e.workMu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return sol.Work{}, ctx.Err()
		}
	}
	return c.w, c.err
}

type workCall struct {
	done chan struct{}
	w    sol.Work
	err  error
}

// toleranceRule is the rule's part of a cache key: "" and "default" are
// one rule, so keys made before the field existed stay valid.
func toleranceRule(r string) string {
	if r == ToleranceDefault {
		return ""
	}
	return r
}

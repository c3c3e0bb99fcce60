package harness

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// Measured costs of earlier evaluations (issue 34): a sweep or a suite
// that starts the longest work first finishes sooner, and what an
// evaluation of the same programs took last time says how long better than
// words in the source do. Kept per reference, candidate and target, the
// latest evaluation's.

// Cost is what one evaluation of a pair took.
type Cost struct {
	BuildS  float64 // the candidate's build and import (prepare_build, load_candidate)
	DeviceS float64 // the device held (device_held)
	WallS   float64 // the whole evaluation
}

func migrateEvalCost(db *sql.DB) error {
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS eval_cost (
		ref_hash TEXT NOT NULL,
		cand_hash TEXT NOT NULL,
		target TEXT NOT NULL,
		build_s REAL NOT NULL,
		device_s REAL NOT NULL,
		wall_s REAL NOT NULL,
		updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (ref_hash, cand_hash, target)
	)`)
	if err != nil {
		return fmt.Errorf("migrate eval_cost: %w", err)
	}
	return nil
}

func contentHash(code string) string {
	h := sha256.Sum256([]byte(code))
	return hex.EncodeToString(h[:])
}

// CostOf reads what an evaluation took from its stage seconds: the cost
// to keep for it, the one rule for the Evaluator's own results and for the
// results the fleet's coordinator receives from workers (which evaluate
// without a database). ok is false for a cached answer: it measured
// nothing, and the evaluation it repeats kept its cost already.
func CostOf(res *EvalResult) (c Cost, ok bool) {
	if res == nil || res.Cached {
		return Cost{}, false
	}
	s := res.StageS
	return Cost{BuildS: s[StagePrepareBuild] + s["load_candidate"], DeviceS: s[StageDeviceHeld], WallS: res.WallS}, true
}

// costPut keeps what a fresh evaluation took.
func (e *Evaluator) costPut(ctx context.Context, r *evalRun, res *EvalResult) {
	c, ok := CostOf(res)
	if e.cfg.DB == nil || !ok {
		return
	}
	if err := RecordCost(ctx, e.cfg.DB, r.refCode, r.candCode, string(r.tgt), c); err != nil {
		e.log.Warn("eval cost write", "err", err)
	}
}

// RecordCost keeps c as the latest cost of the pair on target: the one
// write of eval_cost (the Evaluator's own evaluations, and the fleet's
// coordinator for the results workers send; tests that seed costs go
// through it too, so they write the rows the Evaluator would).
func RecordCost(ctx context.Context, db Execer, refCode, candCode, target string, c Cost) error {
	_, err := db.ExecContext(ctx, `INSERT OR REPLACE INTO eval_cost (ref_hash, cand_hash, target, build_s, device_s, wall_s) VALUES (?, ?, ?, ?, ?, ?)`,
		contentHash(refCode), contentHash(candCode), target, c.BuildS, c.DeviceS, c.WallS)
	if err != nil {
		return fmt.Errorf("record eval cost: %w", err)
	}
	return nil
}

// CostReader looks up what the latest evaluation of a pair took: the
// Evaluator, and the evaluators a scheduler holds (a kernelbench sweep's,
// a suite's engine's, the fleet's), each reading through LookupCost.
type CostReader interface {
	StoredCost(ctx context.Context, refCode, candCode, target string) (Cost, bool)
}

// Execer is a database, a connection or a transaction to write on.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// RowQuerier is a database, a connection or a transaction to read from:
// the fleet's queue looks costs up inside its claim's transaction.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// StoredCost is what the latest evaluation of these programs on target
// took ("" or "auto": on any target); ok is false where none was kept.
func (e *Evaluator) StoredCost(ctx context.Context, refCode, candCode, target string) (c Cost, ok bool) {
	if e == nil || e.cfg.DB == nil {
		return Cost{}, false
	}
	return LookupCost(ctx, e.cfg.DB, refCode, candCode, target)
}

// LookupCost is the one read of eval_cost, for whoever holds the database
// but no Evaluator (the fleet's coordinator). A database without the table
// (no Evaluator ever opened it) has no costs: ok is false.
func LookupCost(ctx context.Context, db RowQuerier, refCode, candCode, target string) (c Cost, ok bool) {
	anyTarget := target == "" || target == "auto"
	err := db.QueryRowContext(ctx, `SELECT build_s, device_s, wall_s FROM eval_cost
		WHERE ref_hash = ? AND cand_hash = ? AND (target = ? OR ?) ORDER BY updated_at DESC LIMIT 1`,
		contentHash(refCode), contentHash(candCode), target, anyTarget).Scan(&c.BuildS, &c.DeviceS, &c.WallS)
	return c, err == nil
}

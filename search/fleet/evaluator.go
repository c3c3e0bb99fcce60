package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
)

// Evaluator implements search.Evaluator over the fleet: it enqueues one job
// per device kind and waits for their results, so the engine runs a fleet
// search unchanged.
//
// With several kinds (a heterogeneous fleet: h100 and h200, or nvidia and
// amd) every node is evaluated on each; the first kind is the primary and
// its result is the node's result, hence its fitness. The other kinds'
// results stay in the jobs table, side by side (KindResults).
type Evaluator struct {
	Queue *Queue
	// Kinds to evaluate on; empty = the problem's target, any arch.
	Kinds []Kind
	// Timeout per evaluation on the worker (0 = the harness default).
	Timeout time.Duration
	// SkipTiming evaluates correctness and integrity only (tests).
	SkipTiming bool
	// Poll is how often other processes' changes are looked for (default 250 ms).
	Poll time.Duration
	// Log receives a warning when no live worker offers a kind a job waits
	// for (a mistyped --targets would otherwise wait silently).
	Log *slog.Logger
}

var (
	_ search.Evaluator   = (*Evaluator)(nil)
	_ harness.CostReader = (*Evaluator)(nil)
)

// StoredCost is what the latest evaluation of the pair took on target, read
// from the coordinator's database as the queue reads it: a suite whose
// engine evaluates through the fleet orders its turns by it.
func (e *Evaluator) StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool) {
	return storedCosts{e.Queue.DB()}.StoredCost(ctx, refCode, candCode, target)
}

func (e *Evaluator) kinds(p search.Problem) []Kind {
	if len(e.Kinds) == 0 {
		return []Kind{{Target: p.Target}}
	}
	return e.Kinds
}

// Evaluate enqueues (or finds) the jobs for code and waits for them.
func (e *Evaluator) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	ref, err := problem.ReadFile("reference", p.ReferencePath)
	if err != nil {
		return nil, fmt.Errorf("fleet: reference: %w", err)
	}
	kinds := e.kinds(p)
	ids := make([]string, len(kinds))
	for i, k := range kinds {
		kp := p
		if k.Target != "" {
			kp.Target = k.Target
		}
		if ids[i], err = e.Queue.Enqueue(ctx, kp, k, string(ref), code, e.Timeout, e.SkipTiming); err != nil {
			return nil, err
		}
	}
	poll := e.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	results := make([]*JobRecord, len(ids))
	nextCheck := time.Now().Add(30 * time.Second)
	for {
		ch := e.Queue.Changed()
		pending := 0
		for i, id := range ids {
			if results[i] != nil {
				continue
			}
			j, err := e.Queue.Job(ctx, id)
			if err != nil {
				return nil, err
			}
			if j.State == JobDone || j.State == JobFailed {
				results[i] = j
			} else {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if time.Now().After(nextCheck) {
			nextCheck = time.Now().Add(5 * time.Minute)
			e.warnUnserved(ctx, kinds, results)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		case <-time.After(poll):
		}
	}
	prim := results[0]
	if prim.State == JobFailed || prim.Result == nil {
		return nil, fmt.Errorf("fleet: job %s on %s failed on the workers: %s", prim.ID, kinds[0], prim.Error)
	}
	r := *prim.Result
	if len(kinds) > 1 {
		var side []string
		for i, j := range results {
			side = append(side, fmt.Sprintf("%s: %s", kinds[i], describeKindResult(j)))
		}
		r.Log = strings.TrimSpace(r.Log + "\nfleet kinds (the first is the primary, its result is the fitness): " + strings.Join(side, "; "))
	}
	return &r, nil
}

func describeKindResult(j *JobRecord) string {
	if j.Result == nil {
		return "failed: " + j.Error
	}
	s := j.Result.Verdict
	if j.Result.TimeS > 0 {
		s += fmt.Sprintf(" %.4g s", j.Result.TimeS)
	}
	if j.Result.SpeedupVsEager > 0 {
		s += fmt.Sprintf(" (%.2fx eager)", j.Result.SpeedupVsEager)
	}
	return s
}

// KindResult is one kind's evaluation of one node's code.
type KindResult struct {
	Kind   Kind           `json:"kind"`
	JobID  string         `json:"job_id"`
	State  JobState       `json:"state"`
	Worker string         `json:"worker,omitempty"`
	Result *search.Result `json:"result,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// KindResults returns every kind's evaluation of code on p, for reports
// that compare kinds side by side.
func KindResults(ctx context.Context, q *Queue, p search.Problem, code string) ([]KindResult, error) {
	var out []KindResult
	// Jobs are keyed by the kind's target; look under the problem key of
	// each target the problem was evaluated on.
	jobs, err := q.JobsFor(ctx, p.Key(), search.NormalizedHash(code))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.ID] = true
		out = append(out, KindResult{Kind: j.Kind, JobID: j.ID, State: j.State, Worker: j.DoneBy, Result: j.Result, Error: j.Error})
	}
	rows, err := q.db.QueryContext(ctx, `SELECT id FROM fleet_jobs WHERE code_hash = ? AND problem_key LIKE ?`, search.NormalizedHash(code), p.Name+"|%")
	if err != nil {
		return nil, err
	}
	var more []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		if !seen[id] {
			more = append(more, id)
		}
	}
	rows.Close()
	for _, id := range more {
		j, err := q.Job(ctx, id)
		if err != nil && !errors.Is(err, search.ErrNotFound) {
			return nil, err
		}
		if j != nil {
			out = append(out, KindResult{Kind: j.Kind, JobID: j.ID, State: j.State, Worker: j.DoneBy, Result: j.Result, Error: j.Error})
		}
	}
	return out, nil
}

// ParseKinds reads --targets: comma-separated kinds, each TARGET[:ARCH]
// or TARGET[:MODEL] (a target's name or alias), or an arch or product
// alone ("sm_90", "gfx942", "h100", "mi300x"), which implies its target:
// arches by the target table's spelling, products by the spec table's
// vendor (NVIDIA when the spec table does not know the name).
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		if f == "" {
			continue
		}
		k, err := parseKind(f)
		if err != nil {
			return nil, fmt.Errorf("--targets %q: %w", s, err)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--targets %q: name at least one kind (e.g. nvidia:sm_90,amd:gfx942 or h100,h200)", s)
	}
	return out, nil
}

func parseKind(f string) (Kind, error) {
	if t, rest, ok := strings.Cut(f, ":"); ok {
		tg, err := target.ParseTarget(t)
		if err != nil {
			return Kind{}, err
		}
		if tg.ArchPrefix != "" && strings.HasPrefix(rest, tg.ArchPrefix) {
			return Kind{Target: string(tg.Name), Arch: rest}, nil
		}
		return Kind{Target: string(tg.Name), Model: rest}, nil
	}
	if tg, err := target.ParseTarget(f); err == nil {
		return Kind{Target: string(tg.Name)}, nil
	}
	for _, tg := range target.All() {
		if tg.ArchPrefix != "" && strings.HasPrefix(f, tg.ArchPrefix) {
			return Kind{Target: string(tg.Name), Arch: f}, nil
		}
	}
	if row, ok := spec.Get(f); ok {
		return Kind{Target: row.Vendor, Model: f}, nil
	}
	if row, ok := spec.Lookup(f, 0); ok {
		return Kind{Target: row.Vendor, Model: f}, nil
	}
	return Kind{Target: string(target.NVIDIA), Model: f}, nil
}

// warnUnserved logs the kinds still waiting that no live worker offers.
func (e *Evaluator) warnUnserved(ctx context.Context, kinds []Kind, results []*JobRecord) {
	st, err := Snapshot(ctx, e.Queue)
	if err != nil {
		return
	}
	log := e.Log
	if log == nil {
		log = slog.Default()
	}
	for i, k := range kinds {
		if results[i] != nil {
			continue
		}
		served := false
		for _, w := range st.Workers {
			for _, d := range w.Devices {
				served = served || (w.State == "alive" && k.Matches(d))
			}
		}
		if !served {
			log.Warn("fleet: no live worker offers this device kind; its jobs wait", "kind", k.String(), "workers", len(st.Workers))
		}
	}
}

package kernelbench

import (
	"context"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
)

// Evaluator is what the sweep needs from the harness: one evaluation, and
// the version naming the harness's code (results of another version are not
// reused on resume).
type Evaluator interface {
	Evaluate(ctx context.Context, req Request) (*harness.EvalResult, error)
	Version() string
}

// Request is one pair to evaluate.
type Request struct {
	Pair     Pair
	Target   string // cpu | nvidia | auto
	Timeout  time.Duration
	Progress func(stage string, done, total int)
}

// HarnessEvaluator is the harness's evaluator seen by the sweep. It is the
// one place this package calls into the evaluation API, so a change of that
// API (an evaluation service with problems and leases) is adapted here.
type HarnessEvaluator struct{ Ev *harness.Evaluator }

// Evaluate runs one pair: the problem file is the reference, the candidate
// a path (read by the worker's child) or inline code.
func (h HarnessEvaluator) Evaluate(ctx context.Context, req Request) (*harness.EvalResult, error) {
	return h.Ev.Evaluate(ctx, harness.EvalRequest{
		Reference: harness.Source{Path: req.Pair.Problem.Path},
		Candidate: harness.Source{Path: req.Pair.CandidatePath, Code: req.Pair.Code},
		Target:    req.Target,
		Timeout:   req.Timeout,
	}, req.Progress)
}

// Version is the harness version stored with every result.
func (HarnessEvaluator) Version() string { return harness.HarnessVersion() }

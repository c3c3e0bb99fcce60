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
	Pair    Pair
	Target  string // cpu | nvidia | auto
	Timeout time.Duration
	// ToleranceRule adds a verdict under another rule (harness.ToleranceKernelBenchV0).
	ToleranceRule string
	Progress      func(stage string, done, total int)
}

// HarnessEvaluator is the harness's evaluator seen by the sweep. It is the
// one place this package calls into the evaluation API, so a change of that
// API (an evaluation service with problems and leases) is adapted here.
type HarnessEvaluator struct {
	Ev *harness.Evaluator
	// KernelPolicy is the reference_ops policy of every pair ("" = the
	// harness's default; `kernelbench run` passes DefaultKernelPolicy).
	KernelPolicy string
}

// DefaultKernelPolicy is `kernelbench run`'s: KernelBench's rule, the work
// in kernels of the candidate's own (harness.KernelPolicyKernelBench).
const DefaultKernelPolicy = harness.KernelPolicyKernelBench

// Evaluate runs one pair through the evaluation service: the problem file
// is the reference, the candidate a path (read by the worker's child) or
// inline code; the service leases a device of the target.
func (h HarnessEvaluator) Evaluate(ctx context.Context, req Request) (*harness.EvalResult, error) {
	r, err := h.Ev.Evaluate(ctx,
		harness.Problem{Reference: harness.Source{Path: req.Pair.Problem.Path}},
		harness.Candidate{Path: req.Pair.CandidatePath, Code: req.Pair.Code}, nil,
		harness.Options{Target: req.Target, Timeout: req.Timeout, ToleranceRule: req.ToleranceRule, Progress: req.Progress, KernelPolicy: h.KernelPolicy})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Version is the harness version stored with every result.
func (HarnessEvaluator) Version() string { return harness.HarnessVersion() }

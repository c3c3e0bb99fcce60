// Package harnesseval adapts the evaluation service (harness.Evaluator:
// problem + candidate + device lease -> verdict, timing, SOL, fitness) to
// search.Evaluator. It is the one place the search meets the harness.
package harnesseval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/search"
)

// Adapter evaluates candidates through a harness.Evaluator.
type Adapter struct {
	Ev *harness.Evaluator
	// Ceilings bound the problem's declared work (nil = no SOL figures).
	Ceilings *sol.Ceilings
	// Timeout per evaluation (0 = the harness default); Trials of fresh
	// inputs (0 = the harness default of 5).
	Timeout time.Duration
	Trials  int
	// SkipTiming checks correctness and integrity only (no timing, so no
	// speedup): for tests of the machinery around evaluations.
	SkipTiming bool
	// Device pins evaluations to one device of the target, by index or
	// UUID ("" = the least-loaded one).
	Device string
	// Progress, when set, sees the harness's stages.
	Progress func(stage string, done, total int)
	// KernelPolicy is the harness's reference_ops policy ("" = default).
	KernelPolicy string
}

// New is the one place an Adapter is built (search/launch's evaluators and
// the fleet's, the GPU tests' in harnessevaltest): timeout per evaluation
// (0 = the harness default), kernelPolicy the reference_ops policy.
func New(ev *harness.Evaluator, ceil *sol.Ceilings, timeout time.Duration, kernelPolicy string) *Adapter {
	return &Adapter{Ev: ev, Ceilings: ceil, Timeout: timeout, KernelPolicy: kernelPolicy}
}

var (
	_ search.StartEvaluator = (*Adapter)(nil)
	_ harness.CostReader    = (*Adapter)(nil)
)

// StoredCost is what the latest evaluation of the pair took on target (its
// evaluator's eval_cost): a suite orders its problems' turns by it.
func (a *Adapter) StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool) {
	return a.Ev.StoredCost(ctx, refCode, candCode, target)
}

// Evaluate runs code as the candidate against p's reference.
func (a *Adapter) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	return a.evaluate(ctx, p, code, false)
}

// EvaluateFresh is Evaluate measured again, never from the harness's cache.
func (a *Adapter) EvaluateFresh(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	return a.evaluate(ctx, p, code, true)
}

// EvaluateStart is EvaluateFresh for a run's start node. Without
// withCompile it leaves the reference's torch.compile timing to the run's
// next evaluation (the first to claim it measures it, harness
// claimCompile) rather than holding every other one while it compiles.
func (a *Adapter) EvaluateStart(ctx context.Context, p search.Problem, code string, withCompile bool) (*search.Result, error) {
	o := a.options(p, true)
	if !withCompile {
		o.CompileReference = new(bool)
	}
	return a.run(ctx, p, code, o)
}

func (a *Adapter) evaluate(ctx context.Context, p search.Problem, code string, retime bool) (*search.Result, error) {
	return a.run(ctx, p, code, a.options(p, retime))
}

// options are the harness's options for one evaluation of a problem.
func (a *Adapter) options(p search.Problem, retime bool) harness.Options {
	return harness.Options{Target: p.Target, Device: a.Device, Timeout: a.Timeout, Trials: a.Trials, SkipTiming: a.SkipTiming, Progress: a.Progress,
		KernelPolicy: a.KernelPolicy, Retime: retime}
}

func (a *Adapter) run(ctx context.Context, p search.Problem, code string, o harness.Options) (*search.Result, error) {
	if a.Ev == nil {
		return nil, fmt.Errorf("evaluate: no evaluator")
	}
	prob := harness.Problem{Name: p.Name, Reference: harness.Source{Path: p.ReferencePath}, Shapes: p.ShapeSet, Dtype: p.Dtype,
		Work: problem.Work{FLOPs: p.FLOPs, Bytes: p.Bytes, Shapes: p.ShapeSet, Dtype: p.Dtype}}
	if t := p.Tolerance; t != nil {
		prob.Tolerance = &harness.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
	}
	// The service bounds every timed evaluation by the speed of light of
	// the device it ran on (and flags a candidate faster than that).
	hr, err := a.Ev.Evaluate(ctx, prob, harness.Candidate{Code: code}, nil, o)
	if err != nil {
		return nil, err
	}
	return convert(&hr, a.solSeconds(p)), nil
}

func (a *Adapter) work(p search.Problem) (sol.Work, bool) {
	if a.Ceilings == nil || (p.FLOPs <= 0 && p.Bytes <= 0) {
		return sol.Work{}, false
	}
	dtype := spec.NormalizeDtype(p.Dtype)
	if dtype == "" {
		dtype = spec.FP32
	}
	return sol.Work{FLOPs: p.FLOPs, Bytes: p.Bytes, Dtype: dtype, Source: "declared"}, true
}

func (a *Adapter) solSeconds(p search.Problem) float64 {
	w, ok := a.work(p)
	if !ok {
		return 0
	}
	return sol.Analyze(w, *a.Ceilings, 0, 0, false).TSolS
}

func convert(hr *harness.EvalResult, tsol float64) *search.Result {
	r := &search.Result{Verdict: hr.Verdict, Correct: hr.Correct, Stage: hr.Stage, Device: hr.Device,
		Log: hr.Log, WallS: hr.WallS, Cached: hr.Cached, SOLSeconds: tsol}
	for _, c := range hr.Checks {
		r.Checks = append(r.Checks, search.Check{Name: c.Name, Passed: c.Passed, Detail: c.Detail})
	}
	if hr.Candidate != nil {
		r.TimeS, r.CV = hr.Candidate.MedianS, hr.Candidate.CV
	}
	if hr.RefEager != nil {
		r.EagerS = hr.RefEager.MedianS
	}
	if hr.RefCompile != nil {
		r.CompileS = hr.RefCompile.MedianS
	}
	if hr.SpeedupVsEager != nil {
		r.SpeedupVsEager = *hr.SpeedupVsEager
	}
	if hr.SpeedupVsCompile != nil {
		r.SpeedupVsCompile = *hr.SpeedupVsCompile
	}
	if hr.Noise != nil && hr.Noise.Noisy {
		r.Noisy, r.NoisyWhy = true, hr.Noise.Why
	}
	// The harness computed the candidate's speed of light on the device it
	// ran on (applySOL); tsol, the problem's own bound from its declared
	// work, stands in only where the harness timed nothing.
	if hr.TSolS != nil && *hr.TSolS > 0 {
		r.SOLSeconds = *hr.TSolS
		if hr.SOL != nil {
			r.SOLBound = hr.SOL.Bound
		}
		if hr.PctOfSol != nil {
			r.PctOfSOL = *hr.PctOfSol
		}
		if hr.SolScore != nil {
			r.SOLScore = *hr.SolScore
		}
	}
	if raw, err := json.Marshal(hr); err == nil {
		r.Raw = raw
	}
	return r
}

package search

import (
	"encoding/json"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Verdicts the harness returns (harness/problem defines them). Only
// VerdictPass earns a fitness above zero.
const (
	VerdictPass               = problem.VerdictPass
	VerdictIncorrect          = problem.VerdictIncorrect
	VerdictCompileError       = problem.VerdictCompileError
	VerdictRuntimeError       = problem.VerdictRuntimeError
	VerdictTimeout            = problem.VerdictTimeout
	VerdictCrash              = problem.VerdictCrash
	VerdictIntegrityViolation = problem.VerdictIntegrityViolation
	VerdictReferenceError     = problem.VerdictReferenceError
)

// Check is one named correctness or integrity check of an evaluation.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Result is one evaluation as the search sees it: the harness's verdict and
// timings, the speed-of-light figures beside them, and the fitness derived
// from both (see Fitness).
type Result struct {
	Verdict string  `json:"verdict"`
	Correct bool    `json:"correct"`
	Stage   string  `json:"stage,omitempty"` // the stage that failed
	Device  string  `json:"device,omitempty"`
	Checks  []Check `json:"checks,omitempty"`
	Log     string  `json:"log,omitempty"` // trimmed, for an operator to act on

	// Median seconds of the candidate and of the reference, eager and
	// torch.compile (0 = not measured).
	TimeS    float64 `json:"time_s,omitempty"`
	EagerS   float64 `json:"eager_s,omitempty"`
	CompileS float64 `json:"compile_s,omitempty"`
	// CV is the candidate's robust coefficient of variation.
	CV               float64 `json:"cv,omitempty"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile,omitempty"`
	// Noisy says the speedups (and so the fitness) are not to be trusted:
	// a timing's spread or the host's load was too high; NoisyWhy says
	// which, with the figures.
	Noisy    bool   `json:"noisy,omitempty"`
	NoisyWhy string `json:"noisy_why,omitempty"`

	// SOLSeconds is the roofline bound t_SOL for the problem on this device
	// (0 = unknown); PctOfSOL = 100·t_SOL/t_candidate (percent); SOLScore is the harness's
	// score in [0,1] (0 for an incorrect candidate).
	SOLSeconds float64 `json:"sol_s,omitempty"`
	PctOfSOL   float64 `json:"pct_of_sol,omitempty"`
	SOLScore   float64 `json:"sol_score,omitempty"`
	SOLBound   string  `json:"sol_bound,omitempty"` // compute | memory

	// Fitness is the speedup over the run's baseline timed in the same
	// evaluation, 0 for anything but a pass (see Fitness): SpeedupVsEager,
	// or SpeedupVsCompile with a compile baseline.
	Fitness float64 `json:"fitness"`

	WallS  float64 `json:"wall_s,omitempty"`
	Cached bool    `json:"cached,omitempty"`
	// Raw is the evaluation service's own result, kept whole for reports.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// FailedChecks returns the checks that did not pass.
func (r *Result) FailedChecks() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

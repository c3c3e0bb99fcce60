package search

import "fmt"

// Baselines a run's fitness can be measured against.
const (
	BaselineEager   = "eager"
	BaselineCompile = "compile"
)

// ParseBaseline checks a --baseline value ("" = eager).
func ParseBaseline(s string) (string, error) {
	switch s {
	case "", BaselineEager:
		return BaselineEager, nil
	case BaselineCompile, "torch.compile":
		return BaselineCompile, nil
	}
	return "", fmt.Errorf("baseline %q: use eager or compile", s)
}

// Fitness is KernelEvolve's F: the speedup over the baseline for a kernel
// that passed every check, 0 for anything else (incorrect, flagged by an
// integrity check, failed to build, timed out). The baseline's time is the
// one in r, timed in the same evaluation, so F is r's own SpeedupVsEager
// (or SpeedupVsCompile). Where torch.compile was not measured, a compile
// baseline falls back to eager rather than scoring a correct kernel 0.
func Fitness(r *Result, baseline string) float64 {
	if r == nil || r.Verdict != VerdictPass || !r.Correct || !(r.TimeS > 0) {
		return 0
	}
	base := r.EagerS
	if baseline == BaselineCompile && r.CompileS > 0 {
		base = r.CompileS
	}
	if !(base > 0) {
		return 0
	}
	return base / r.TimeS
}

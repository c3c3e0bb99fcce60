// Package termination holds τ, the rules that end a run: evaluation, time
// and token budgets, a plateau of non-improving evaluations, within ε of
// the speed of light (μCUTLASS's rule) and a target speedup. The first rule
// that fires ends the run and names itself.
package termination

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
)

// Rule is one stopping condition.
type Rule func(p search.Progress) (bool, string)

// All stops when any rule does.
type All []Rule

var _ search.Termination = All(nil)

func (a All) Stop(p search.Progress) (bool, string) {
	for _, r := range a {
		if stop, why := r(p); stop {
			return true, why
		}
	}
	return false, ""
}

// FromBudget builds the rules a budget asks for.
func FromBudget(b search.Budget) All {
	var a All
	if b.Evals > 0 {
		a = append(a, Evals(b.Evals))
	}
	if b.Time > 0 {
		a = append(a, func(p search.Progress) (bool, string) {
			return p.Elapsed >= b.Time, fmt.Sprintf("time budget of %s spent", b.Time)
		})
	}
	if b.Tokens > 0 {
		a = append(a, func(p search.Progress) (bool, string) {
			return p.Tokens >= b.Tokens, fmt.Sprintf("token budget of %d spent", b.Tokens)
		})
	}
	if b.Plateau > 0 {
		a = append(a, func(p search.Progress) (bool, string) {
			return p.SinceBest >= b.Plateau, fmt.Sprintf("plateau: %d evaluations without a new best", b.Plateau)
		})
	}
	if b.SOLEpsilon > 0 {
		a = append(a, NearSOL(b.SOLEpsilon))
	}
	if b.TargetSpeedup > 0 {
		a = append(a, func(p search.Progress) (bool, string) {
			return p.BestFitness >= b.TargetSpeedup, fmt.Sprintf("target speedup %.2fx reached (%.2fx)", b.TargetSpeedup, p.BestFitness)
		})
	}
	return a
}

// Evals stops after n evaluations.
func Evals(n int) Rule {
	return func(p search.Progress) (bool, string) {
		return p.Evals >= n, fmt.Sprintf("evaluation budget of %d spent", n)
	}
}

// NearSOL is μCUTLASS's rule: stop once the best kernel beats the baseline
// (fitness > 1) and t_best <= (1+eps)·t_SOL.
func NearSOL(eps float64) Rule {
	return func(p search.Progress) (bool, string) {
		if p.BestFitness <= 1 || p.SOLSeconds <= 0 || p.BestTimeS <= 0 {
			return false, ""
		}
		return p.BestTimeS <= (1+eps)*p.SOLSeconds,
			fmt.Sprintf("within %.0f%% of the speed of light (best %.3g s, SOL %.3g s)", eps*100, p.BestTimeS, p.SOLSeconds)
	}
}

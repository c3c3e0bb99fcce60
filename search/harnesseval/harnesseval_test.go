package harnesseval

import (
	"testing"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
)

// A harness result as the search sees it: its fitness is its own
// speedup_vs_eager (or _vs_compile), to the bit, and a noisy timing stays
// flagged with its reason.
func TestConvertKeepsSpeedupsAndNoise(t *testing.T) {
	cand, eager, compile := 1.37e-5, 2.9e-4, 1.1e-4
	se, sc := eager/cand, compile/cand // as the harness divides them (setSpeedups)
	hr := &harness.EvalResult{Verdict: harness.VerdictPass, Correct: true,
		Candidate: &harness.Stats{MedianS: cand, CV: 0.31}, RefEager: &harness.Stats{MedianS: eager}, RefCompile: &harness.Stats{MedianS: compile},
		SpeedupVsEager: &se, SpeedupVsCompile: &sc,
		Noise: &harness.Noise{Noisy: true, Why: "the candidate's timing spread is 0.31", CandidateCV: 0.31}}
	r := convert(hr, 0)
	if f := search.Fitness(r, search.BaselineEager); f != r.SpeedupVsEager || f != se {
		t.Fatalf("fitness %v, speedup_vs_eager %v (harness %v)", f, r.SpeedupVsEager, se)
	}
	if f := search.Fitness(r, search.BaselineCompile); f != r.SpeedupVsCompile || f != sc {
		t.Fatalf("fitness %v, speedup_vs_compile %v (harness %v)", f, r.SpeedupVsCompile, sc)
	}
	if !r.Noisy || r.NoisyWhy != hr.Noise.Why {
		t.Fatalf("noisy %v %q", r.Noisy, r.NoisyWhy)
	}
	hr.Noise.Noisy = false
	if r := convert(hr, 0); r.Noisy || r.NoisyWhy != "" {
		t.Fatalf("a quiet timing flagged: %q", r.NoisyWhy)
	}
}

package harness

import (
	"strings"
	"testing"
)

// A result's speedups are flagged noisy, with the figures that made them
// so, when a timing's spread or the host's load during the candidate's
// timing is too high; a quiet one carries its figures unflagged.
func TestSetNoise(t *testing.T) {
	quiet := func() *EvalResult {
		s := 2.0
		return &EvalResult{Verdict: VerdictPass, Correct: true, SpeedupVsEager: &s,
			Candidate: &Stats{MedianS: 1e-3, CV: 0.03, Host: &HostLoad{WaitShare: 0.01, LoadAvg1m: 0.5, CPUs: 2}},
			RefEager:  &Stats{MedianS: 2e-3, CV: 0.05}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*EvalResult)
		noisy string // a part of Why; "" = not noisy
	}{
		{"quiet", func(*EvalResult) {}, ""},
		{"candidate spread", func(r *EvalResult) { r.Candidate.CV = 0.35 }, "candidate's timing spread is 0.35"},
		{"reference spread", func(r *EvalResult) { r.RefEager.CV = 0.5 }, "eager reference's timing spread is 0.50"},
		{"host load", func(r *EvalResult) { r.Candidate.Host = &HostLoad{WaitShare: 0.4, LoadAvg1m: 5.1, CPUs: 2} }, "waited for a CPU 40% of the time it was runnable (load average 5.10 on 2 CPUs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := quiet()
			tc.edit(r)
			setNoise(r)
			n := r.Noise
			if n == nil || n.CandidateCV != r.Candidate.CV || n.EagerCV != r.RefEager.CV || n.WaitShare != r.Candidate.Host.WaitShare {
				t.Fatalf("figures missing: %+v", n)
			}
			if n.Noisy != (tc.noisy != "") || !strings.Contains(n.Why, tc.noisy) {
				t.Fatalf("noisy %v (%q), want %q", n.Noisy, n.Why, tc.noisy)
			}
			if warned := len(r.Warnings) > 0 && strings.Contains(r.Warnings[0], n.Why); warned != n.Noisy {
				t.Fatalf("warnings %q for noisy=%v", r.Warnings, n.Noisy)
			}
		})
	}
	r := quiet()
	r.SpeedupVsEager = nil
	if setNoise(r); r.Noise != nil {
		t.Fatalf("a result without speedups judged: %+v", r.Noise)
	}
}

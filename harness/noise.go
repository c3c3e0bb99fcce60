package harness

import (
	"fmt"
	"strings"
)

// A speedup divides two medians, each timed over a loop of its own; on a
// shared host either can be off by a factor, not only by its spread
// (issue 36: the eager reference's median ranged 0.27 to 6.2 ms across
// evaluations of one problem on a loaded 2-core CPU). A result says so
// when the figures show it: a timing whose robust CV is over NoisyCV, or
// a candidate's timing whose threads spent more than NoisyWaitShare of
// the time they were runnable waiting for a CPU. On that host, while a
// build ran beside it, every call of the two-thread pool waited a 16 ms
// time slice (a 65 us matrix product read 16 ms, wait share 0.5, where
// quiet it reads 0.01), and its spread could stay small.
const (
	NoisyCV        = 0.2
	NoisyWaitShare = 0.1
)

// setNoise judges the speedups of a result that has them, with a warning
// when they are not to be trusted.
func setNoise(res *EvalResult) {
	res.Noise = nil
	if res.Candidate == nil || (res.SpeedupVsEager == nil && res.SpeedupVsCompile == nil) {
		return
	}
	n := &Noise{CandidateCV: res.Candidate.CV}
	var why []string
	spread := func(who string, s *Stats) float64 {
		if s == nil {
			return 0
		}
		if s.CV > NoisyCV {
			why = append(why, fmt.Sprintf("the %s's timing spread is %.2f (robust CV, over %.2f)", who, s.CV, NoisyCV))
		}
		return s.CV
	}
	spread("candidate", res.Candidate)
	n.EagerCV = spread("eager reference", res.RefEager)
	n.CompileCV = spread("torch.compile reference", res.RefCompile)
	if h := res.Candidate.Host; h != nil {
		n.WaitShare = h.WaitShare
		if h.WaitShare > NoisyWaitShare {
			why = append(why, fmt.Sprintf("the candidate's timing waited for a CPU %.0f%% of the time it was runnable (load average %.2f on %d CPUs)",
				100*h.WaitShare, h.LoadAvg1m, h.CPUs))
		}
	}
	n.Noisy, n.Why = len(why) > 0, strings.Join(why, "; ")
	if q := quietNote(res); q != "" && n.Noisy {
		n.Why += "; " + q
	}
	res.Noise = n
	if n.Noisy {
		res.Warnings = append(res.Warnings, "noisy timing: "+n.Why+": the speedups may be off by more than their spread; measure again on a quieter host")
	}
}

// quietNote says which medians are of undisturbed calls only (Stats.QuietIters):
// on a loaded host they are the credible part of the figures, though
// the calls still shared caches and memory with the load.
func quietNote(res *EvalResult) string {
	var parts []string
	for _, t := range []struct {
		who string
		s   *Stats
	}{{"candidate", res.Candidate}, {"eager reference", res.RefEager}, {"torch.compile reference", res.RefCompile}} {
		if t.s != nil && t.s.QuietIters > 0 {
			parts = append(parts, fmt.Sprintf("the %s's median is of the %d of %d calls no thread waited in (%.3g s over every call)",
				t.who, t.s.QuietIters, t.s.Iters, t.s.MedianAllS))
		}
	}
	return strings.Join(parts, "; ")
}

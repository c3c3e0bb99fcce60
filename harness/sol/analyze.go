package sol

import (
	"fmt"
	"math"
)

// Result is a roofline bound for a problem and, when a candidate time is
// given, how close the candidate comes to it.
type Result struct {
	FLOPs               float64 `json:"flops"`
	Bytes               float64 `json:"bytes"`
	ArithmeticIntensity float64 `json:"arithmetic_intensity"` // FLOP per byte
	TComputeS           float64 `json:"t_compute_s"`
	TMemoryS            float64 `json:"t_memory_s"`
	Bound               string  `json:"bound"` // compute | memory
	TSolS               float64 `json:"t_sol_s"`
	Dtype               string  `json:"dtype"`
	PeakFLOPS           float64 `json:"peak_flops"`
	MemBandwidth        float64 `json:"mem_bandwidth_bytes_per_s"`
	CeilingSource       string  `json:"ceiling_source"`
	WorkSource          string  `json:"work_source"`

	CandidateS    *float64 `json:"candidate_s,omitempty"`
	ReferenceS    *float64 `json:"reference_s,omitempty"`
	PctOfSol      *float64 `json:"pct_of_sol,omitempty"`
	SolScore      *float64 `json:"sol_score,omitempty"`
	Headroom      *float64 `json:"headroom,omitempty"`
	FasterThanSol *bool    `json:"faster_than_sol,omitempty"`

	Summary string   `json:"summary"`
	Notes   []string `json:"notes,omitempty"`
}

// FasterThanSolMargin: a candidate more than this fraction below t_sol is
// flagged; measured ceilings are a few percent below true peaks, so a small
// margin absorbs that without letting a faked result through.
const FasterThanSolMargin = 0.10

// peakFor picks the compute ceiling for a dtype. fp32 work is judged against
// fp32 (no TF32): that is what eager PyTorch runs by default.
func peakFor(c Ceilings, dtype string) (float64, string) {
	if v := c.PeakFLOPS[dtype]; v > 0 {
		return v, dtype
	}
	return 0, ""
}

// Analyze bounds work on a device. candidateS and referenceS are measured
// times in seconds (0 = not given). correct=false zeroes the SOL score.
func Analyze(work Work, ceil Ceilings, candidateS, referenceS float64, correct bool) Result {
	r := Result{FLOPs: work.FLOPs, Bytes: work.Bytes, Dtype: work.Dtype, MemBandwidth: ceil.MemBandwidth,
		CeilingSource: ceil.Source, WorkSource: work.Source}
	if work.Bytes > 0 {
		r.ArithmeticIntensity = work.FLOPs / work.Bytes
	}
	if ceil.Provisional {
		r.Notes = append(r.Notes, ProvisionalNote)
	}
	peak, _ := peakFor(ceil, work.Dtype)
	r.PeakFLOPS = peak
	switch {
	case work.FLOPs > 0 && peak > 0:
		r.TComputeS = work.FLOPs / peak
	case work.FLOPs > 0:
		r.Notes = append(r.Notes, fmt.Sprintf("no compute ceiling for dtype %q (%s): compute time left out of the bound", work.Dtype, ceil.Source))
	}
	if work.Bytes > 0 && ceil.MemBandwidth > 0 {
		r.TMemoryS = work.Bytes / ceil.MemBandwidth
	} else if work.Bytes > 0 {
		r.Notes = append(r.Notes, "no memory bandwidth ceiling: memory time left out of the bound")
	}
	r.Bound = "memory"
	r.TSolS = r.TMemoryS
	if r.TComputeS > r.TMemoryS {
		r.Bound, r.TSolS = "compute", r.TComputeS
	}
	r.Summary = fmt.Sprintf("%s-bound: %s FLOP, %s, AI %.3g FLOP/B → SOL %s on %s",
		r.Bound, si(work.FLOPs, ""), si(work.Bytes, "B"), r.ArithmeticIntensity, dur(r.TSolS), ceil.Source)
	if candidateS <= 0 || math.IsNaN(candidateS) || math.IsInf(candidateS, 0) {
		if candidateS != 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("candidate time %g s is not a positive finite time: ignored", candidateS))
		}
		return r
	}
	r.CandidateS = ptr(candidateS)
	if referenceS > 0 && !math.IsInf(referenceS, 0) {
		r.ReferenceS = ptr(referenceS)
	}
	if r.TSolS <= 0 {
		r.Notes = append(r.Notes, "t_sol is 0 (no work or no ceilings): no SOL figures for the candidate")
		return r
	}
	r.PctOfSol = ptr(r.TSolS / candidateS * 100)
	r.Headroom = ptr(candidateS / r.TSolS)
	fast := candidateS < (1-FasterThanSolMargin)*r.TSolS
	r.FasterThanSol = &fast
	score, note := Score(candidateS, referenceS, r.TSolS, correct)
	r.SolScore = &score
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	if fast {
		r.Notes = append(r.Notes, fmt.Sprintf("candidate %s is more than %.0f%% below the speed of light %s: suspect wrong work counts, stale ceilings or a result that skips work", dur(candidateS), FasterThanSolMargin*100, dur(r.TSolS)))
	}
	r.Summary += fmt.Sprintf("; candidate %s = %.1f%% of SOL (%.2fx headroom), sol_score %.3f", dur(candidateS), *r.PctOfSol, *r.Headroom, score)
	if fast {
		r.Summary += " [FASTER THAN SOL]"
	}
	return r
}

// Score is SOL-ExecBench's score 1/(1 + (T_k − T_sol)/(T_b − T_sol)): 0.5 at
// the reference time T_b, 1 at the speed of light, toward 0 as T_k grows.
// Edge cases, each explained in the returned note:
//   - incorrect, or T_k not a positive finite time: 0;
//   - no reference time (T_b <= 0): the score is undefined; 0 with a note;
//   - T_b <= T_sol (the reference already at or past the bound, so the
//     ceilings or counts are off): the formula's denominator is not positive;
//     score with T_sol taken as 0, i.e. T_b/(T_b+T_k), still 0.5 at the
//     reference and rising with speed;
//   - T_k < T_sol: the raw formula exceeds 1; capped at 1 (faster_than_sol
//     flags it separately).
func Score(tk, tb, tsol float64, correct bool) (float64, string) {
	if !correct {
		return 0, "incorrect candidate: sol_score 0"
	}
	if !(tk > 0) || math.IsInf(tk, 0) {
		return 0, "candidate time not positive: sol_score 0"
	}
	if !(tb > 0) || math.IsInf(tb, 0) {
		return 0, "no reference time: sol_score needs T_b, reported as 0"
	}
	note := ""
	if tb <= tsol {
		note = fmt.Sprintf("reference %s is not slower than SOL %s: sol_score computed with T_sol=0 (T_b/(T_b+T_k))", dur(tb), dur(tsol))
		tsol = 0
	}
	s := 1 / (1 + (tk-tsol)/(tb-tsol))
	if s > 1 {
		s = 1
	}
	return s, note
}

func ptr[T any](v T) *T { return &v }

func si(v float64, unit string) string {
	prefixes := []struct {
		f float64
		p string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
	for _, p := range prefixes {
		if math.Abs(v) >= p.f {
			return fmt.Sprintf("%.3g %s%s", v/p.f, p.p, unit)
		}
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func dur(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	case s >= 1e-6:
		return fmt.Sprintf("%.3g µs", s*1e6)
	default:
		return fmt.Sprintf("%.3g ns", s*1e9)
	}
}

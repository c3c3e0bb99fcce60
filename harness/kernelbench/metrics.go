package kernelbench

import (
	"fmt"
	"math"
	"sort"
)

// Thresholds are KernelBench's fast_p speedups: fast_0 is "correct", fast_p
// for p > 0 is "correct and more than p times faster".
var Thresholds = []float64{0, 1, 1.5, 2}

// FastP is one fast_p figure over one baseline.
type FastP struct {
	P        float64 `json:"p"`
	Count    int     `json:"count"`
	Fraction float64 `json:"fraction"`
}

// Geomean is the geometric mean speedup over the pairs that passed and
// have that baseline's timing; N says how many that is.
type Geomean struct {
	Speedup float64 `json:"speedup"`
	N       int     `json:"n"`
}

// Metrics are KernelBench's figures for one sweep.
type Metrics struct {
	// Denominator of every fast_p: all pairs of the sweep, tool errors
	// included (a pair the harness could not judge is not a fast kernel).
	// Problems without a candidate are not in it; they are counted in
	// Summary.Missing.
	Pairs       int            `json:"pairs"`
	Correct     int            `json:"correct"`
	FastEager   []FastP        `json:"fast_p_eager"`
	FastCompile []FastP        `json:"fast_p_compile"`
	Eager       *Geomean       `json:"geomean_speedup_eager,omitempty"`
	Compile     *Geomean       `json:"geomean_speedup_compile,omitempty"`
	Verdicts    map[string]int `json:"verdicts"`
	// VerdictsKernelBenchV0 counts the pairs' verdicts under KernelBench
	// v0's tolerance, where the harness gave them; Differ lists the
	// pairs whose two verdicts differ.
	VerdictsKernelBenchV0 map[string]int `json:"verdicts_kernelbench_v0,omitempty"`
	DifferKernelBenchV0   []string       `json:"differ_kernelbench_v0,omitempty"`
	ToolErrors            int            `json:"tool_errors"`
}

// Compute derives the metrics from the records of a sweep. A correct pair
// without a baseline's timing (torch.compile is not timed on the CPU)
// counts for fast_0 but for no higher fast_p over that baseline.
func Compute(recs []Record) Metrics {
	m := Metrics{Pairs: len(recs), Verdicts: map[string]int{}}
	var logE, logC float64
	var nE, nC int
	for _, r := range recs {
		if r.ToolError != "" {
			m.ToolErrors++
			continue
		}
		m.Verdicts[r.Verdict]++
		m.countV0(r)
		if !r.Correct() {
			continue
		}
		m.Correct++
		if s := r.SpeedupVsEager; s != nil && *s > 0 {
			logE += math.Log(*s)
			nE++
		}
		if s := r.SpeedupVsCompile; s != nil && *s > 0 {
			logC += math.Log(*s)
			nC++
		}
	}
	m.FastEager = fastP(recs, m.Pairs, func(r Record) *float64 { return r.SpeedupVsEager })
	m.FastCompile = fastP(recs, m.Pairs, func(r Record) *float64 { return r.SpeedupVsCompile })
	if nE > 0 {
		m.Eager = &Geomean{Speedup: math.Exp(logE / float64(nE)), N: nE}
	}
	if nC > 0 {
		m.Compile = &Geomean{Speedup: math.Exp(logC / float64(nC)), N: nC}
	}
	return m
}

func fastP(recs []Record, denom int, speedup func(Record) *float64) []FastP {
	out := make([]FastP, len(Thresholds))
	for i, p := range Thresholds {
		out[i].P = p
		for _, r := range recs {
			if !r.Correct() {
				continue
			}
			if p == 0 {
				out[i].Count++
				continue
			}
			if s := speedup(r); s != nil && *s > p {
				out[i].Count++
			}
		}
		if denom > 0 {
			out[i].Fraction = float64(out[i].Count) / float64(denom)
		}
	}
	return out
}

// VerdictNames lists the verdicts seen, most frequent first.
func (m Metrics) VerdictNames() []string {
	var names []string
	for v := range m.Verdicts {
		names = append(names, v)
	}
	sort.Slice(names, func(i, j int) bool {
		if m.Verdicts[names[i]] != m.Verdicts[names[j]] {
			return m.Verdicts[names[i]] > m.Verdicts[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// countV0 adds a pair's verdict under KernelBench v0's tolerance.
func (m *Metrics) countV0(r Record) {
	if r.VerdictKernelBenchV0 == "" {
		return
	}
	if m.VerdictsKernelBenchV0 == nil {
		m.VerdictsKernelBenchV0 = map[string]int{}
	}
	m.VerdictsKernelBenchV0[r.VerdictKernelBenchV0]++
	if r.VerdictKernelBenchV0 != r.Verdict {
		m.DifferKernelBenchV0 = append(m.DifferKernelBenchV0, fmt.Sprintf("%s: %s (kernelbench-v0: %s)", r.Problem, r.Verdict, r.VerdictKernelBenchV0))
	}
}

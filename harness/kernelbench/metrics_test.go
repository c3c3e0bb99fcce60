package kernelbench

import (
	"math"
	"strings"
	"testing"
)

func f(x float64) *float64 { return &x }

func rec(verdict string, eager, compile *float64) Record {
	return Record{Verdict: verdict, SpeedupVsEager: eager, SpeedupVsCompile: compile}
}

func TestCompute(t *testing.T) {
	toolErr := Record{ToolError: "the harness's Python failed"}
	cases := []struct {
		name        string
		recs        []Record
		fastEager   []int // counts at Thresholds 0, 1, 1.5, 2
		fastCompile []int
		geoEager    float64 // 0: none
		geoEagerN   int
		geoCompile  float64
		verdicts    map[string]int
		toolErrors  int
	}{
		{name: "empty", fastEager: []int{0, 0, 0, 0}, fastCompile: []int{0, 0, 0, 0}, verdicts: map[string]int{}},
		{
			name: "speedups around the thresholds",
			recs: []Record{
				rec("pass", f(0.5), f(0.25)),
				rec("pass", f(1), f(1)), // exactly 1: not faster (KernelBench's > p)
				rec("pass", f(1.5), f(1.2)),
				rec("pass", f(2.0000001), f(3)),
				rec("pass", f(8), nil), // no compile timing
			},
			fastEager:   []int{5, 3, 2, 2},
			fastCompile: []int{5, 2, 1, 1},
			geoEager:    math.Pow(0.5*1*1.5*2.0000001*8, 1.0/5), geoEagerN: 5,
			geoCompile: math.Pow(0.25*1*1.2*3, 1.0/4),
			verdicts:   map[string]int{"pass": 5},
		},
		{
			name: "failures never count, whatever their speedup; tool errors stay in the denominator",
			recs: []Record{
				rec("pass", f(4), f(2.5)),
				rec("incorrect", f(100), f(100)),
				rec("integrity_violation", f(2199), nil),
				rec("runtime_error", nil, nil),
				toolErr,
			},
			fastEager:   []int{1, 1, 1, 1},
			fastCompile: []int{1, 1, 1, 1},
			geoEager:    4, geoEagerN: 1, geoCompile: 2.5,
			verdicts:   map[string]int{"pass": 1, "incorrect": 1, "integrity_violation": 1, "runtime_error": 1},
			toolErrors: 1,
		},
		{
			name:        "all tool errors",
			recs:        []Record{toolErr, toolErr},
			fastEager:   []int{0, 0, 0, 0},
			fastCompile: []int{0, 0, 0, 0},
			verdicts:    map[string]int{},
			toolErrors:  2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Compute(tc.recs)
			if m.Pairs != len(tc.recs) {
				t.Errorf("pairs %d, want %d", m.Pairs, len(tc.recs))
			}
			for i, p := range Thresholds {
				if m.FastEager[i].P != p || m.FastEager[i].Count != tc.fastEager[i] {
					t.Errorf("fast_%g eager = %+v, want count %d", p, m.FastEager[i], tc.fastEager[i])
				}
				if m.FastCompile[i].Count != tc.fastCompile[i] {
					t.Errorf("fast_%g compile = %+v, want count %d", p, m.FastCompile[i], tc.fastCompile[i])
				}
				if len(tc.recs) > 0 {
					if want := float64(tc.fastEager[i]) / float64(len(tc.recs)); math.Abs(m.FastEager[i].Fraction-want) > 1e-12 {
						t.Errorf("fast_%g eager fraction %g, want %g", p, m.FastEager[i].Fraction, want)
					}
				}
			}
			checkGeo(t, "eager", m.Eager, tc.geoEager, tc.geoEagerN)
			checkGeo(t, "compile", m.Compile, tc.geoCompile, -1)
			if len(m.Verdicts) != len(tc.verdicts) {
				t.Errorf("verdicts %v, want %v", m.Verdicts, tc.verdicts)
			}
			for v, n := range tc.verdicts {
				if m.Verdicts[v] != n {
					t.Errorf("verdict %s: %d, want %d", v, m.Verdicts[v], n)
				}
			}
			if m.ToolErrors != tc.toolErrors {
				t.Errorf("tool errors %d, want %d", m.ToolErrors, tc.toolErrors)
			}
		})
	}
}

func checkGeo(t *testing.T, name string, g *Geomean, want float64, n int) {
	t.Helper()
	if want == 0 {
		if g != nil {
			t.Errorf("geomean %s = %+v, want none", name, g)
		}
		return
	}
	if g == nil || math.Abs(g.Speedup-want) > 1e-9*want || (n >= 0 && g.N != n) {
		t.Errorf("geomean %s = %+v, want %g (n=%d)", name, g, want, n)
	}
}

// TestVerdictsUnderKernelBenchV0: the verdicts under KernelBench v0's
// tolerance are counted and the pairs judged otherwise listed, in the
// metrics and the text; a sweep without them prints nothing of it; a
// torch.compile speedup no pair has is "not measured", not 0.
func TestVerdictsUnderKernelBenchV0(t *testing.T) {
	v0 := func(p, ours, theirs string) Record {
		r := rec(ours, f(2), nil)
		r.Problem, r.VerdictKernelBenchV0 = p, theirs
		return r
	}
	cases := []struct {
		name   string
		recs   []Record
		counts map[string]int
		differ int
		text   []string
		absent []string
	}{
		{"no rule asked", []Record{rec("pass", f(2), nil)}, nil, 0,
			[]string{"1.000 (1)          not measured"}, []string{"KernelBench v0"}},
		{"v0 passes what fp32 1e-4 does not", []Record{v0("level1/1_A", "pass", "pass"), v0("level1/2_B", "incorrect", "pass"), v0("level2/3_C", "incorrect", "incorrect")},
			map[string]int{"pass": 2, "incorrect": 1}, 1,
			[]string{"verdicts under KernelBench v0's tolerance (1e-2 for every dtype): pass 2 incorrect 1; 1 pair(s) judged otherwise", "level1/2_B: incorrect (kernelbench-v0: pass)"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Compute(tc.recs)
			if len(m.VerdictsKernelBenchV0) != len(tc.counts) || len(m.DifferKernelBenchV0) != tc.differ {
				t.Fatalf("v0 verdicts %v, differ %v", m.VerdictsKernelBenchV0, m.DifferKernelBenchV0)
			}
			for v, n := range tc.counts {
				if m.VerdictsKernelBenchV0[v] != n {
					t.Errorf("%s: %d, want %d", v, m.VerdictsKernelBenchV0[v], n)
				}
			}
			var b strings.Builder
			(&Summary{Metrics: m}).WriteText(&b)
			for _, s := range tc.text {
				if !strings.Contains(b.String(), s) {
					t.Errorf("text lacks %q:\n%s", s, b.String())
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(b.String(), s) {
					t.Errorf("text has %q:\n%s", s, b.String())
				}
			}
		})
	}
}

// The device's busy share is printed when a device phase ran, and only then.
func TestSummaryDeviceBusyLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		sum  Summary
		want string
	}{
		{"device held", Summary{DeviceBusyShare: 0.774, DeviceHeldS: 91.94}, "device busy: 77% of the wall (device phases held it 91.9 s in all)"},
		{"no device phase (CPU)", Summary{}, ""},
	} {
		tc.sum.Metrics = Compute(nil)
		var b strings.Builder
		tc.sum.WriteText(&b)
		got := strings.Contains(b.String(), "device busy")
		if got != (tc.want != "") || (tc.want != "" && !strings.Contains(b.String(), tc.want)) {
			t.Errorf("%s: text\n%s\nwant line %q", tc.name, b.String(), tc.want)
		}
	}
}

package kernelbench

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints a summary for people: KernelBench's metrics, verdict
// counts, tool errors listed one by one, each shortened to a line.
func (s *Summary) WriteText(w io.Writer) { s.WriteTextFull(w, false) }

// WriteTextFull is WriteText; full prints each tool error whole (its
// traceback, an out-of-memory message) instead of its headline.
func (s *Summary) WriteTextFull(w io.Writer, full bool) {
	m := s.Metrics
	fmt.Fprintf(w, "KernelBench levels %s, candidates %s, target %s, harness %s\n",
		joinInts(s.Levels), s.Candidates, s.Target, s.HarnessVersion)
	fmt.Fprintf(w, "problems %d, pairs %d (evaluated %d, resumed %d), no candidate %d, wall %.1fs\n",
		s.Problems, m.Pairs, s.Evaluated, s.Resumed, len(s.Missing), s.WallS)
	if s.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED: %d of %d pairs done; run the same command again to resume\n", m.Pairs, s.Planned)
	}
	fmt.Fprintf(w, "fast_p over the %d pairs (tool errors count as not fast; problems without a candidate are not counted):\n", m.Pairs)
	fmt.Fprintf(w, "  %-10s %-18s %-18s\n", "", "vs eager", "vs torch.compile")
	for i, p := range Thresholds {
		name := fmt.Sprintf("fast_%g", p)
		compile := frac(m.FastCompile[i])
		if m.Correct > 0 && m.Compile == nil && p > 0 {
			compile = "not measured" // no correct pair has a torch.compile timing
		}
		fmt.Fprintf(w, "  %-10s %-18s %-18s\n", name, frac(m.FastEager[i]), compile)
	}
	fmt.Fprintf(w, "geomean speedup over the %d correct pairs: eager %s, torch.compile %s\n", m.Correct, geo(m.Eager), geo(m.Compile))
	fmt.Fprintf(w, "verdicts:")
	for _, v := range m.VerdictNames() {
		fmt.Fprintf(w, " %s %d", v, m.Verdicts[v])
	}
	if len(m.Verdicts) == 0 {
		fmt.Fprint(w, " none")
	}
	fmt.Fprintf(w, "; tool errors %d\n", m.ToolErrors)
	if len(m.VerdictsKernelBenchV0) > 0 {
		fmt.Fprintf(w, "verdicts under KernelBench v0's tolerance (1e-2 for every dtype):")
		for _, v := range (Metrics{Verdicts: m.VerdictsKernelBenchV0}).VerdictNames() {
			fmt.Fprintf(w, " %s %d", v, m.VerdictsKernelBenchV0[v])
		}
		fmt.Fprintf(w, "; %d pair(s) judged otherwise\n", len(m.DifferKernelBenchV0))
		for _, d := range m.DifferKernelBenchV0 {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
	for _, te := range s.ToolErrors {
		fmt.Fprintf(w, "  TOOL ERROR %s (%s): %s\n", te.Problem, te.Candidate, errorText(te.Error, 400, full))
	}
	if s.ReferenceAsCandidate {
		judged := m.Pairs - m.ToolErrors
		fmt.Fprintf(w, "reference-as-candidate: %d of %d judged pairs caught (integrity_violation), %d not caught\n",
			judged-s.Uncaught(), judged, s.Uncaught())
	}
	if len(s.Unmatched) > 0 {
		fmt.Fprintf(w, "candidates naming no problem of these levels: %s\n", strings.Join(s.Unmatched, ", "))
	}
	if s.Evaluated > 0 {
		fmt.Fprintf(w, "throughput: %d evaluated in %.0f s, %.1f a minute\n", s.Evaluated, s.WallS, s.EvalsPerMinute)
	}
	if s.DeviceHeldS > 0 {
		fmt.Fprintf(w, "device busy: %.0f%% of the wall (device phases held it %.1f s in all)\n", 100*s.DeviceBusyShare, s.DeviceHeldS)
	}
	if s.DevicePhaseMedianS > 0 {
		fmt.Fprintf(w, "device phase: median %.2f s held against %.3f s of correctness and timing (%s)\n",
			s.DevicePhaseMedianS, s.TimedMedianS, overhead(s.DevicePhaseMedianS, s.TimedMedianS))
	}
	if s.Memory != nil {
		fmt.Fprintf(w, "peak host memory: kevolve-mcp %.0f MiB, largest worker process %.0f MiB\n",
			float64(s.Memory.PeakRSSGoBytes)/(1<<20), float64(s.Memory.PeakRSSWorkerBytes)/(1<<20))
	}
	if s.JSONL != "" {
		fmt.Fprintf(w, "results: %s\n", s.JSONL)
	}
}

func frac(f FastP) string { return fmt.Sprintf("%.3f (%d)", f.Fraction, f.Count) }

func geo(g *Geomean) string {
	if g == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3fx (n=%d)", g.Speedup, g.N)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// Uncaught counts the judged pairs of a reference-as-candidate sweep whose
// verdict is not integrity_violation: each is the harness letting the
// reference pass as a candidate. 0 for other sweeps.
func (s *Summary) Uncaught() int {
	if !s.ReferenceAsCandidate {
		return 0
	}
	return s.Metrics.Pairs - s.Metrics.ToolErrors - s.Metrics.Verdicts["integrity_violation"]
}

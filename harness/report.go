package harness

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints an evaluation as `kevolve-mcp eval` shows it: the
// verdict first, then every check, the timings and what to read next.
func WriteTable(w io.Writer, r *EvalResult) error {
	return WriteTableOpts(w, r, TableOptions{})
}

// TableOptions change how WriteTableOpts prints a result.
type TableOptions struct {
	// Full prints check details, notes, warnings and the log whole (a
	// traceback, an out-of-memory message) instead of one shortened line.
	Full bool
}

// WriteTableOpts is WriteTable with options.
func WriteTableOpts(w io.Writer, r *EvalResult, o TableOptions) error {
	oneLine := oneLine
	if o.Full {
		oneLine = func(s string, _ int) string { return indentRest(s, "        ") }
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	verdict := strings.ToUpper(r.Verdict)
	if r.Stage != "" && r.Verdict != VerdictPass {
		verdict += " (at " + r.Stage + ")"
	}
	p("verdict\t%s", verdict)
	if r.VerdictKernelBenchV0 != "" {
		p("verdict (kernelbench-v0)\t%s", strings.ToUpper(r.VerdictKernelBenchV0))
	}
	p("target\t%s on %s (device %d)", r.Target, r.Device, r.DeviceIndex)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.Passed {
			mark = "FAIL"
		}
		p("  %s %s\t%s", mark, c.Name, oneLine(c.Detail, 110))
	}
	if r.Candidate != nil {
		p("candidate\t%s", statsText(r.Candidate))
	}
	if r.RefEager != nil {
		p("reference (eager)\t%s", statsText(r.RefEager))
	}
	if r.RefCompile != nil {
		p("reference (torch.compile)\t%s", statsText(r.RefCompile))
	}
	for _, b := range r.BaselinesReused {
		p("  reused\t%s measured %s ago on %s (saves %.1f s; --retime measures again)", b.Kind, Seconds(b.AgeS), b.Where, b.SavedS)
	}
	if r.SpeedupVsEager != nil {
		p("speedup vs eager\t%.3fx", *r.SpeedupVsEager)
	}
	if r.SpeedupVsCompile != nil {
		p("speedup vs torch.compile\t%.3fx", *r.SpeedupVsCompile)
	}
	if s := r.SOL; s != nil {
		if r.TSolS != nil {
			p("speed of light\t%s (%s-bound, %s work, %s ceilings)", Seconds(s.TSolS), s.Bound, s.WorkSource, s.Ceilings)
		}
		if r.PctOfSol != nil && r.SolScore != nil {
			p("  candidate\t%.1f%% of SOL, sol_score %.3f", *r.PctOfSol, *r.SolScore)
		}
		for _, n := range s.Notes {
			p("  note\t%s", oneLine(n, 110))
		}
	}
	if r.Candidate != nil {
		compile := "torch.compile not measured"
		if s := r.Fitness.SpeedupVsCompile; s != nil {
			compile = fmt.Sprintf("%.3f over torch.compile", *s)
		}
		p("fitness\t%.3f over eager, %s, sol_score %.3f", r.Fitness.SpeedupVsEager, compile, r.Fitness.SolScore)
	}
	for _, n := range r.Notes {
		p("note\t%s", oneLine(n, 200))
	}
	for _, wmsg := range r.Warnings {
		p("warning\t%s", oneLine(wmsg, 120))
	}
	cached := ""
	if r.Cached {
		cached = " (from cache"
		if r.MeasuredAt != "" {
			cached += ", measured " + r.MeasuredAt
		}
		cached += "; --retime measures again)"
	}
	p("wall\t%.2f s%s", r.WallS, cached)
	if err := tw.Flush(); err != nil {
		return err
	}
	if (r.Verdict != VerdictPass || o.Full) && strings.TrimSpace(r.Log) != "" {
		fmt.Fprintf(w, "\nlog (trimmed):\n%s\n", indent(r.Log, "  "))
	}
	return nil
}

func statsText(s *Stats) string {
	return fmt.Sprintf("median %s  p10 %s  p90 %s  cv %.2f%%  (%d iters)",
		Seconds(s.MedianS), Seconds(s.P10S), Seconds(s.P90S), s.CV*100, s.Iters)
}

// Seconds formats a duration in seconds with the unit a kernel engineer
// reads at a glance.
func Seconds(s float64) string {
	switch {
	case s <= 0:
		return "-"
	case s < 1e-3:
		return fmt.Sprintf("%.2f us", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.3f ms", s*1e3)
	}
	return fmt.Sprintf("%.3f s", s)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// indentRest keeps s's lines, indenting all but the first (which follows a
// table column), so a multi-line detail stays readable under its row.
func indentRest(s, pre string) string {
	s = strings.TrimRight(s, "\n")
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	return first + "\n" + indent(rest, pre)
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}

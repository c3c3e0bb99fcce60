package optimize

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable is the summary as the optimize command prints it: the
// model's operators ranked, what was deployed or not, the end-to-end
// check, the notes and where the package and the report went.
func (s *Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s on %s (%s), forward %.0f us\n", s.Model, s.Device, s.Arch, s.ForwardUs)
	if c := s.Capture; c != nil && s.Profile != nil && s.Profile.TotalUs > 0 {
		t := s.Profile.TotalUs
		fmt.Fprintf(tw, "captured\t%d graph(s), %d break cause(s): regions %.1f%%, glue %.1f%%, not captured %.1f%% of the profiled forward\n",
			c.Graphs, len(c.Breaks), 100*c.RegionsUs/t, 100*c.GlueUs/t, 100*c.NotCapturedUs/t)
	}
	fmt.Fprintln(tw, "op\tshare\theadroom\tsaving\tamdahl\tproblem\tnote")
	for _, op := range s.Ops {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1fx\t%.1f%%\t%.2fx\t%s\t%s\n", op.Name, 100*op.Share, op.Headroom, 100*op.Saving, op.Amdahl, op.ProblemID, op.Note)
	}
	for _, d := range s.Deployed {
		fmt.Fprintf(tw, "deployed\t%s %v %s on %s: %.2fx (entry %s)\n", d.Op, d.Shapes, d.Dtype, d.Arch, d.Speedup, d.ID)
	}
	for _, r := range s.Rejected {
		fmt.Fprintf(tw, "not deployed\t%s\n", r)
	}
	if e := s.EndToEnd; e != nil {
		fmt.Fprintf(tw, "end to end\tcorrect %v, %.3fx vs eager, %s, %.3fx predicted %s\n", e.Correct, e.SpeedupVsEager, vsCompile(e), e.PredictedSpeedup, e.Detail)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	if s.Export != "" {
		fmt.Fprintf(tw, "export\t%s (import kevolve_kernels; kevolve_kernels.patch(model))\n", s.Export)
	}
	if s.Report != "" {
		fmt.Fprintf(tw, "report\t%s\n", s.Report)
	}
	fmt.Fprintf(tw, "wall\t%.0f s\n", s.WallS)
	return tw.Flush()
}

// vsCompile is the end-to-end figure against torch.compile, or why there
// is none.
func vsCompile(e *EndToEnd) string {
	switch {
	case e.SpeedupVsCompile > 0 && e.PatchedCompileS > 0:
		return fmt.Sprintf("%.3fx vs torch.compile (patched %.0f us, patched under torch.compile %.0f us, torch.compile %.0f us)",
			e.SpeedupVsCompile, 1e6*e.PatchedS, 1e6*e.PatchedCompileS, 1e6*e.CompileS)
	case e.SpeedupVsCompile > 0:
		return fmt.Sprintf("%.3fx vs torch.compile", e.SpeedupVsCompile)
	case e.CompileError != "":
		return "torch.compile failed: " + e.CompileError
	}
	return "torch.compile not measured"
}

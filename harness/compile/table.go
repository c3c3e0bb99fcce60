package compile

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes a Result for a terminal: status and compiler, the
// diagnostics as file:line:col, per-kernel resources, then the instruction
// mix. The JSON form (the compile_kernel tool's output) holds everything.
func WriteTable(w io.Writer, r *Result) error {
	status := strings.ToUpper(r.Status)
	if r.Cached {
		status += " (cached)"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "language\t%s\n", r.Language)
	if r.Arch != "" {
		fmt.Fprintf(tw, "arch\t%s\n", r.Arch)
	}
	fmt.Fprintf(tw, "compiler\t%s\n", r.Compiler)
	fmt.Fprintf(tw, "time\t%.2f s\n", r.CompileSeconds)
	if r.Dir != "" {
		fmt.Fprintf(tw, "artifacts\t%s\n", r.Dir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
	if len(r.Diagnostics) > 0 {
		fmt.Fprintln(w, "\ndiagnostics:")
		for _, d := range r.Diagnostics {
			loc := d.File
			if d.Line > 0 {
				loc = fmt.Sprintf("%s:%d", loc, d.Line)
				if d.Col > 0 {
					loc = fmt.Sprintf("%s:%d", loc, d.Col)
				}
			}
			if loc != "" {
				loc += ": "
			}
			fmt.Fprintf(w, "  %s%s: %s\n", loc, d.Severity, d.Message)
		}
	} else if !r.OK && r.Log != "" {
		fmt.Fprintf(w, "\ncompiler output:\n%s\n", r.Log)
	}
	if len(r.Kernels) > 0 {
		fmt.Fprintln(w, "\nkernels:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tREGS\tSHARED\tSTACK\tSPILL ST/LD\tWARPS")
		for _, k := range r.Kernels {
			shared := fmt.Sprint(k.SharedStaticBytes)
			if k.SharedDynBytes > 0 {
				shared = fmt.Sprintf("%d+%d dyn", k.SharedStaticBytes, k.SharedDynBytes)
			}
			warps := "-"
			if k.NumWarps > 0 {
				warps = fmt.Sprint(k.NumWarps)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%d/%d\t%s\n", k.Name, k.Registers, shared, k.StackFrameBytes, k.SpillStoreBytes, k.SpillLoadBytes, warps)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if s := r.SASS; s != nil {
		fmt.Fprintf(w, "\ninstructions: %d", s.Instructions)
		if len(s.TopOpcodes) > 0 {
			var top []string
			for i, o := range s.TopOpcodes {
				if i == 8 {
					break
				}
				top = append(top, fmt.Sprintf("%s %d", o.Op, o.Count))
			}
			fmt.Fprintf(w, " (top: %s)", strings.Join(top, ", "))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  tensor core %s, 16-byte loads %s, 16-byte stores %s, async copy %s, local loads/stores %d/%d\n",
			yesNo(s.TensorCore, s.TensorCoreOps), yesNo(s.Vector16Load, nil), yesNo(s.Vector16Store, nil),
			yesNo(s.AsyncCopy, s.AsyncCopyOps), s.LocalLoads, s.LocalStores)
	}
	for _, k := range r.Kernels {
		if a := k.AMD; a != nil {
			fmt.Fprintf(w, "\n%s (AMDGCN, wave%d): VGPR %d (arch %d, AGPR %d), SGPR %d, LDS %d B, scratch %d B, spills VGPR %d / SGPR %d, waves/SIMD %d\n",
				k.Name, a.WavefrontSize, a.VGPRs, a.ArchVGPRs, a.AGPRs, a.SGPRs, a.LDSBytes, a.ScratchBytes, a.VGPRSpills, a.SGPRSpills, a.WavesPerSIMD)
		}
	}
	if g := r.AMDGCN; g != nil {
		fmt.Fprintf(w, "\ninstructions: %d (AMDGCN)\n", g.Instructions)
		fmt.Fprintf(w, "  MFMA %s, 16-byte loads %s, 16-byte stores %s, scratch ops %d, cross-lane ops %d\n",
			yesNo(g.MFMA, g.MFMAOps), yesNo(g.Vector16Load, nil), yesNo(g.Vector16Store, nil), g.ScratchOps, g.CrossLaneOps)
	}
	if len(r.Lint) > 0 {
		fmt.Fprintln(w, "\n64-lane wavefront lint:")
		for _, l := range r.Lint {
			fmt.Fprintf(w, "  line %d:%d: %s: %s (%s)\n    fix: %s\n", l.Line, l.Col, l.Severity, l.Message, l.Rule, l.Fix)
		}
	}
	if len(r.See) > 0 {
		fmt.Fprintf(w, "\nsee: %s\n", strings.Join(r.See, ", "))
	}
	if len(r.Vectorized) > 0 {
		fmt.Fprintln(w, "\nvectorized loops:")
		for _, v := range r.Vectorized {
			fmt.Fprintf(w, "  %s\n", v)
		}
	}
	return nil
}

func yesNo(b bool, ops []string) string {
	if !b {
		return "no"
	}
	if len(ops) > 0 {
		return "yes (" + strings.Join(ops, ", ") + ")"
	}
	return "yes"
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newSolCmd) }

func newSolCmd(c *cli) *cobra.Command {
	var (
		in        tools.SolAnalysisInput
		candidate string
		target    string
		svg       string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "sol --ref FILE|PROBLEM [--candidate FILE]",
		Short: "Speed-of-light bound of a problem (and a candidate's SOL score)",
		Long: `Bound a problem by its speed of light: the least time its FLOPs and bytes
need on this device (or on --device, a spec-table key). A bundled problem
declares its counts; a reference file is traced. With --candidate the
candidate is evaluated first and scored against the bound.`,
		Example: `  kevolve-mcp sol --ref llm/rmsnorm --shapes small
  kevolve-mcp sol --ref llm/rmsnorm --candidate my_kernel.py --svg roofline.svg
  kevolve-mcp sol --flops 1e12 --bytes 4e9 --device h100 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			a := c.newApp()
			defer a.close()
			ctx, cancel := signalContext()
			defer cancel()
			if err := a.openDB(); err != nil {
				c.logger.Warn("no database: measured ceilings unavailable", "err", err)
			}
			if candidate != "" {
				res, err := a.evaluate(ctx, tools.RunKernelInput{Reference: in.Reference, Candidate: candidate, Target: target, Shapes: in.Shapes}, stageProgress(stderr))
				if err != nil {
					return err
				}
				if !withMeasured(&in, &res) {
					return fmt.Errorf("the candidate was not timed (verdict %s): fix it first (kevolve-mcp eval shows why)", res.Verdict)
				}
			}
			rep, err := a.solReport(ctx, in)
			if err != nil {
				return err
			}
			if svg != "" {
				if err := writeFile(svg, func(w io.Writer) error { return sol.WriteRooflineSVG(w, rep) }); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "roofline written to %s\n", svg)
			}
			if asJSON {
				return printJSON(stdout, rep)
			}
			return sol.WriteTable(stdout, rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.Reference, "ref", "", "reference `file` (traced) or corpus problem name (declared counts)")
	f.StringVar(&candidate, "candidate", "", "candidate `file`: evaluated first, then scored against SOL")
	f.StringVar(&in.Device, "device", "", "spec-table `key` to bound against (default: this machine's device)")
	f.StringVar(&in.Dtype, "dtype", "", "compute dtype for the FLOP ceiling")
	f.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem")
	f.Float64Var(&in.Flops, "flops", 0, "declared FLOPs (with --bytes, no trace)")
	f.Float64Var(&in.Bytes, "bytes", 0, "declared bytes")
	f.StringVar(&target, "target", "auto", "where to evaluate --candidate: cpu, nvidia or auto")
	f.StringVar(&svg, "svg", "", "also draw the roofline into this SVG `file`")
	f.BoolVar(&asJSON, "json", false, "print the structured result the sol_analysis tool returns")
	_ = cmd.RegisterFlagCompletionFunc("ref", completeReference)
	_ = cmd.MarkFlagFilename("candidate", "py")
	_ = cmd.MarkFlagFilename("svg", "svg")
	_ = cmd.RegisterFlagCompletionFunc("device", completeSpecKey)
	_ = cmd.RegisterFlagCompletionFunc("dtype", fixedCompletion("bf16", "fp16", "fp32", "tf32", "fp8"))
	_ = cmd.RegisterFlagCompletionFunc("target", fixedCompletion("auto", "cpu", "nvidia"))
	_ = cmd.RegisterFlagCompletionFunc("shapes", fixedCompletion("large", "small"))
	return cmd
}

// withMeasured puts a timed evaluation's shape set, medians and correctness
// into a SOL request, so the bound counts the work that was timed (a CPU run
// defaults to the small set); an untimed one leaves it unchanged.
func withMeasured(in *tools.SolAnalysisInput, res *harness.EvalResult) bool {
	m, ok := res.Measured()
	if ok {
		in.Shapes, in.CandidateS, in.ReferenceS, in.Correct = m.Shapes, m.CandidateS, m.ReferenceS, &m.Correct
	}
	return ok
}

// solReport validates in as the sol_analysis tool does and bounds it under
// the ceilings of this machine's device (or of in.Device).
func (a *app) solReport(ctx context.Context, in tools.SolAnalysisInput) (sol.Report, error) {
	rep := a.devices.Get(ctx, false)
	if in.Shapes == "" && in.Device == "" && (rep.Python == nil || !rep.Python.CUDAUsable) {
		// This machine evaluates on its CPU, where an evaluation runs a
		// problem's small shape set (harness.Evaluate): bound the same
		// shapes with or without --candidate.
		in.Shapes = "small"
	}
	r, msg := tools.SolRequest(ctx, in, sol.TraceOptions{Python: a.python}, a.resolver())
	if msg != "" {
		return sol.Report{}, errors.New(msg)
	}
	ceil, err := sol.ForDevice(ctx, a.db, rep, in.Device)
	if err != nil {
		return sol.Report{}, err
	}
	return sol.AnalyzeRequest(ctx, r, ceil)
}

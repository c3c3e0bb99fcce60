package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
)

func init() { register(newSolCmd) }

func newSolCmd(c *cli) *cobra.Command {
	var (
		q      harness.SOLQuery
		svg    string
		asJSON bool
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
			a := c.host()
			defer a.Close()
			ctx, cancel := signalContext()
			defer cancel()
			if err := a.OpenDB(); err != nil {
				c.logger.Warn("no database: measured ceilings unavailable", "err", err)
			}
			d := a.SOLDeps(ctx)
			if q.Candidate != "" {
				ev, err := a.Evaluator()
				if err != nil {
					return err
				}
				d.Evaluator, q.Progress = ev, stageProgress(stderr)
			}
			rep, err := harness.SOLAnalysis(ctx, q, d)
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
	f.StringVar(&q.Reference, "ref", "", "reference `file` (traced) or corpus problem name (declared counts)")
	f.StringVar(&q.Candidate, "candidate", "", "candidate `file`: evaluated first, then scored against SOL")
	f.StringVar(&q.Device, "device", "", "spec-table `key` to bound against (default: this machine's device)")
	f.StringVar(&q.Dtype, "dtype", "", "compute dtype for the FLOP ceiling")
	f.StringVar(&q.Shapes, "shapes", "", "shape set of a corpus problem")
	f.Float64Var(&q.FLOPs, "flops", 0, "declared FLOPs (with --bytes, no trace)")
	f.Float64Var(&q.Bytes, "bytes", 0, "declared bytes")
	f.StringVar(&q.Target, "target", "auto", "where to evaluate --candidate: cpu, nvidia or auto")
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

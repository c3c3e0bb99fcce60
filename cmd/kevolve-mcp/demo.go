package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newDemoCmd) }

// newDemoCmd is `make run`'s main job on whatever hardware is here: evaluate
// the default problem's start kernel (CUDA on an NVIDIA GPU, C on a CPU),
// show its verdict and speedup, then where it stands against the speed of
// light, with the roofline drawn to a file.
func newDemoCmd(c *cli) *cobra.Command {
	var name, svgPath string
	cmd := &cobra.Command{
		Use:   "demo [--problem NAME] [--svg FILE]",
		Short: "What make run shows: a start kernel's verdict, speedup and speed of light",
		Long: `Evaluate a bundled problem's start kernel on this machine (CUDA on an NVIDIA
GPU, C on a CPU), show its verdict and speedup, then where it stands against
the speed of light, with the roofline drawn to an SVG file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo(c, name, svgPath, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&name, "problem", corpus.Default, "corpus `problem` to run")
	cmd.Flags().StringVar(&svgPath, "svg", filepath.Join(os.TempDir(), "kevolve-roofline.svg"), "where to draw the roofline")
	_ = cmd.RegisterFlagCompletionFunc("problem", completeReference)
	_ = cmd.MarkFlagFilename("svg", "svg")
	return cmd
}

func demo(c *cli, name, svgPath string, stdout, stderr io.Writer) error {
	a := c.host()
	defer a.Close()
	ctx, cancel := signalContext()
	defer cancel()

	rep := a.Devices().Get(ctx, false)
	target, kind := "cpu", "c"
	if rep.Python != nil && rep.Python.CUDAUsable {
		target, kind = "nvidia", "cuda"
	}
	where := fmt.Sprintf("%s, %d threads", rep.CPU.Model, rep.CPU.Threads)
	if target == "nvidia" && len(rep.GPUs) > 0 {
		where = rep.GPUs[0].Name
	}
	p, err := corpus.Get(name)
	if err != nil {
		return err
	}
	start, err := p.StartSource(kind)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kevolve-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cand := filepath.Join(dir, "start_"+kind+".py")
	if err := os.WriteFile(cand, []byte(start), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "== %s: its %s start kernel on %s (%s)\n", p.Name, kind, target, where)

	res, err := evaluate(ctx, a, tools.RunKernelInput{Reference: p.Name, Candidate: cand, Target: target}, stageProgress(stderr))
	if err != nil {
		return err
	}
	if err := harness.WriteTable(stdout, &res); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "\n== speed of light\n")
	if err := a.OpenDB(); err == nil && len(rep.GPUs) == 0 && target == "cpu" {
		if _, ok, _ := sol.CPUCalibrationUUID(ctx, a.DB()); !ok {
			fmt.Fprintln(stderr, "calibrating this CPU once (quick: copy bandwidth and fp32 matmul rate)...")
			if _, err := sol.CalibrateAndStore(ctx, a.DB(), sol.CalibrateOptions{Python: a.Python(), Device: "cpu", Quick: true}); err != nil {
				return err
			}
		}
	}
	q := harness.SOLQuery{Reference: p.Name}
	q.WithMeasured(&res)
	srep, err := harness.SOLAnalysis(ctx, q, a.SOLDeps(ctx))
	if err != nil {
		return err
	}
	if err := sol.WriteTable(stdout, srep); err != nil {
		return err
	}
	if err := writeFile(svgPath, func(w io.Writer) error { return sol.WriteRooflineSVG(w, srep) }); err == nil {
		fmt.Fprintf(stdout, "roofline drawn to %s\n", svgPath)
	}
	fmt.Fprintf(stdout, "\n== evolve\nSearch for a faster kernel with the built-in tuner:\n  %s evolve --problem %s --operator tuner --budget 20\n", os.Args[0], p.Name)
	return nil
}

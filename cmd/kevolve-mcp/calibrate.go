package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

func init() { register(newCalibrateCmd) }

func newCalibrateCmd(c *cli) *cobra.Command {
	var (
		quick   bool
		replace bool
		dev     string
		gpu     string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "calibrate [--quick] [--device auto|cuda|cpu] [--gpu N|UUID|all]",
		Short: "Measure this device's copy bandwidth and GEMM rates",
		Long: `Measure the copy bandwidth and the GEMM rates per dtype of this device, and
store them in the database (--db) by device UUID: speed-of-light bounds then
use what this device achieves instead of its data sheet. Each rate is the best
of several timed calls, and the database keeps the best figure ever measured
per metric (a run on a loaded machine does not lower it); --replace stores
this run's figures instead. It takes seconds on a CPU (--quick: about a
second) and up to a minute on a GPU; the time taken is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout := cmd.OutOrStdout()
			ctx, a, cleanup, err := c.openSession()
			if err != nil {
				return err
			}
			defer cleanup()
			// One run per GPU asked for, each pinned to its device by an
			// exclusive lease; none asked for: the default device.
			envs := [][]string{nil}
			if gpu != "" {
				ev, err := a.Evaluator()
				if err != nil {
					return err
				}
				sel := []string{gpu}
				if gpu == "all" {
					devs, err := ev.Devices(ctx, "auto")
					if err != nil {
						return err
					}
					sel = sel[:0]
					for _, d := range devs {
						sel = append(sel, fmt.Sprint(d.Index))
					}
				}
				envs = envs[:0]
				for _, s := range sel {
					l, err := ev.Acquire(ctx, "auto", s, true)
					if err != nil {
						return err
					}
					defer l.Release()
					if l.Target() == "cpu" {
						return fmt.Errorf("--gpu %s: no GPU here (calibrate the CPU without --gpu)", gpu)
					}
					var env []string
					for k, v := range l.Env() {
						env = append(env, k+"="+v)
					}
					envs = append(envs, env)
				}
			}
			var all []sol.Calibration
			for _, env := range envs {
				fmt.Fprintln(cmd.ErrOrStderr(), "measuring copy bandwidth and GEMM rates...")
				m, err := sol.CalibrateAndStore(ctx, a.DB(), sol.CalibrateOptions{Python: a.Python(), Device: dev, Quick: quick, Env: env, Replace: replace})
				if err != nil {
					return err
				}
				all = append(all, m)
			}
			if asJSON {
				if len(all) == 1 {
					return printJSON(stdout, all[0])
				}
				return printJSON(stdout, all)
			}
			for _, m := range all {
				fmt.Fprintf(stdout, "%s (%s), measured in %.1f s, stored in %s\n", m.DeviceName, m.DeviceUUID, m.DurationS, c.g.db)
				for _, k := range sortedKeys(m.Metrics) {
					unit := "FLOP/s"
					if k == "mem_bandwidth" {
						unit = "B/s"
					}
					fmt.Fprintf(stdout, "  %-14s %10.3g %s\n", k, m.Metrics[k], unit)
				}
				for _, n := range m.Notes {
					fmt.Fprintf(stdout, "  note: %s\n", n)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "small sizes (seconds; figures are lower bounds)")
	f.StringVar(&dev, "device", "auto", "auto, cuda or cpu")
	f.BoolVar(&replace, "replace", false, "store this run's figures over earlier ones (default: keep the best of each)")
	f.StringVar(&gpu, "gpu", "", "which GPU to measure (an index or UUID, pinned by a lease), or all: each GPU in turn, stored by its UUID")
	f.BoolVar(&asJSON, "json", false, "print the measurements as JSON")
	_ = cmd.RegisterFlagCompletionFunc("device", fixedCompletion("auto", "cuda", "cpu"))
	return cmd
}

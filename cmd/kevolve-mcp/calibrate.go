package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

func init() { register(newCalibrateCmd) }

func newCalibrateCmd(c *cli) *cobra.Command {
	var (
		quick  bool
		dev    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "calibrate [--quick] [--device auto|cuda|cpu]",
		Short: "Measure this device's copy bandwidth and GEMM rates",
		Long: `Measure the copy bandwidth and the GEMM rates per dtype of this device, and
store them in the database (--db) by device UUID: speed-of-light bounds then
use what this device achieves instead of its data sheet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout := cmd.OutOrStdout()
			a := c.newApp()
			defer a.close()
			if err := a.openDB(); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			fmt.Fprintln(cmd.ErrOrStderr(), "measuring copy bandwidth and GEMM rates (about a minute)...")
			m, err := sol.CalibrateAndStore(ctx, a.db, sol.CalibrateOptions{Python: a.python, Device: dev, Quick: quick})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, m)
			}
			fmt.Fprintf(stdout, "%s (%s), stored in %s\n", m.DeviceName, m.DeviceUUID, c.g.db)
			for _, k := range sortedKeys(m.Metrics) {
				unit := "FLOP/s"
				if k == "mem_bandwidth" {
					unit = "B/s"
				}
				fmt.Fprintf(stdout, "  %-14s %10.3g %s\n", k, m.Metrics[k], unit)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "small sizes (seconds; figures are lower bounds)")
	f.StringVar(&dev, "device", "auto", "auto, cuda or cpu")
	f.BoolVar(&asJSON, "json", false, "print the measurements as JSON")
	_ = cmd.RegisterFlagCompletionFunc("device", fixedCompletion("auto", "cuda", "cpu"))
	return cmd
}

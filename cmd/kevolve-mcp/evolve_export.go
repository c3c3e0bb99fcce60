package main

import (
	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// newEvolveExportCmd wires `evolve export RUN --format jsonl|csv` to
// search/trajectory (through search/runs, which opens the run).
func newEvolveExportCmd(c *cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export RUN [--format jsonl|csv]",
		Short: "A run's proposals as training data: context, proposal, verdict, checks and timing, one a line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inspect(c, runs.InspectRequest{Verb: "export", Ref: args[0], Format: format}, false, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "jsonl or csv")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("jsonl", "csv"))
	return cmd
}

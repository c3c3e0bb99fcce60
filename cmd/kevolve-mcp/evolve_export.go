package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/search/trajectory"
)

// newEvolveExportCmd wires `evolve export RUN --format jsonl|csv` to
// search/trajectory.
func newEvolveExportCmd(c *cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export RUN [--format jsonl|csv]",
		Short: "A run's proposals as training data: context, proposal, verdict, checks and timing, one a line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, done, err := openSearchStore(c)
			if err != nil {
				return err
			}
			defer done()
			recs, err := trajectory.Records(context.Background(), st, args[0])
			if err != nil {
				return err
			}
			return trajectory.Write(cmd.OutOrStdout(), format, recs)
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "jsonl or csv")
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion("jsonl", "csv"))
	return cmd
}

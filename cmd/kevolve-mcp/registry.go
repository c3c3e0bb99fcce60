package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/search/deploy"
)

func init() { register(newRegistryCmd) }

// newRegistryCmd wires `kevolve-mcp registry list|show|remove` to
// search/deploy's registry.
func newRegistryCmd(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry list|show ID|remove ID",
		Short: "Deployed kernels by operator × shapes × dtype × arch",
		Args:  cobra.NoArgs,
	}
	var f deploy.Filter
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--op OP] [--arch ARCH] [--model FILE] [--json]",
		Short: "List the registry's entries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRegistry(c, func(ctx context.Context, r *deploy.Registry) error {
				es, err := r.List(ctx, f)
				if err != nil {
					return err
				}
				for i := range es {
					es[i].Source = ""
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), es)
				}
				return writeEntries(cmd.OutOrStdout(), es)
			})
		},
	}
	list.Flags().StringVar(&f.Op, "op", "", "only this operator signature (rmsnorm, swiglu, ...)")
	list.Flags().StringVar(&f.Arch, "arch", "", "only this arch (sm_90, gfx942, cpu-x86_64)")
	list.Flags().StringVar(&f.Model, "model", "", "only entries found in this model file (absolute path)")
	list.Flags().BoolVar(&asJSON, "json", false, "as JSON")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "One entry with its kernel, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRegistry(c, func(ctx context.Context, r *deploy.Registry) error {
				e, err := r.Get(ctx, args[0])
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), e)
			})
		},
	}
	remove := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove an entry: models patched from then on run the original operator there",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRegistry(c, func(ctx context.Context, r *deploy.Registry) error {
				if err := r.Remove(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(list, show, remove)
	return cmd
}

func withRegistry(c *cli, fn func(context.Context, *deploy.Registry) error) error {
	ctx, a, cleanup, err := c.openSession()
	if err != nil {
		return err
	}
	defer cleanup()
	r, err := deploy.Open(ctx, a.DB())
	if err != nil {
		return err
	}
	return fn(ctx, r)
}

func writeEntries(w io.Writer, es []deploy.Entry) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "id\top\tshapes\tdtype\tarch\tspeedup\tspread\t% of SOL\tmodel")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%.2fx\t%.1f%%\t%.0f\t%s\n", e.ID, e.Op, e.Shapes, e.Dtype, e.Arch, e.Speedup, 100*e.Spread, e.PctOfSOL, e.Model)
	}
	return tw.Flush()
}

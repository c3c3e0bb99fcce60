package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/retrieval"
)

func init() { register(newKBCmd) }

// newKBCmd is `kb search|list` over the knowledge index: the embedded
// documents plus every --kb directory (a global flag), indexed incrementally
// into --db.
func newKBCmd(c *cli) *cobra.Command {
	return groupCmd("kb", "Search or list the knowledge base", newKBSearchCmd(c), newKBListCmd(c))
}

// openKB opens the knowledge index the server would open.
func (c *cli) openKB(ctx context.Context) (*retrieval.Index, func(), error) {
	a := c.host()
	ix, err := a.Knowledge(ctx)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return ix, a.Close, nil
}

func newKBSearchCmd(c *cli) *cobra.Command {
	var (
		q      retrieval.Query
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "search QUERY... [--device D] [-k N]",
		Short: "Search the knowledge base (flags may come before or after the words)",
		Long: `Search the knowledge base as the search_knowledge tool does: BM25 plus
vectors, narrowed to a device's vendor and architecture, with the
constraints of an operator family listed beside the results.`,
		Example: `  kevolve-mcp kb search bank conflicts --device mi300x -k 3
  kevolve-mcp kb search --operator gemm tile sizes --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if q.K < 1 || q.K > retrieval.MaxK {
				return fmt.Errorf("kb search: -k %d: want a number of results between 1 and %d", q.K, retrieval.MaxK)
			}
			ctx := context.Background()
			ix, done, err := c.openKB(ctx)
			if err != nil {
				return fmt.Errorf("kb search: %w", err)
			}
			defer done()
			q.Text = strings.Join(args, " ")
			resp, err := ix.Search(ctx, q)
			if err != nil {
				return fmt.Errorf("kb search: %w", err)
			}
			return retrieval.PrintSearch(cmd.OutOrStdout(), resp, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Device, "device", "", "device: h100, mi300x, cpu, ...")
	f.IntVarP(&q.K, "k", "k", 5, fmt.Sprintf("number of results (1-%d)", retrieval.MaxK))
	f.StringVar(&q.Operator, "operator", "", "operator family (adds its constraints)")
	f.StringVar(&q.Language, "language", "", "kernel language")
	f.StringVar(&q.Diagnosis, "diagnosis", "", "profiler diagnosis text")
	f.StringVar(&q.ErrorText, "error", "", "compiler or runtime error text")
	f.StringArrayVar(&q.Bottlenecks, "bottleneck", nil, "diagnosed bottleneck (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.RegisterFlagCompletionFunc("language", fixedCompletion("cuda", "triton", "hip", "c"))
	_ = cmd.RegisterFlagCompletionFunc("device", completeSpecKey)
	return cmd
}

func newKBListCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the knowledge documents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ix, done, err := c.openKB(context.Background())
			if err != nil {
				return fmt.Errorf("kb list: %w", err)
			}
			defer done()
			return retrieval.PrintList(cmd.OutOrStdout(), ix.List(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

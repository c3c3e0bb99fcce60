package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/corpus"
)

func init() { register(newCorpusCmd) }

func newCorpusCmd(c *cli) *cobra.Command {
	return groupCmd("corpus", "Bundled problems; register a KernelBench checkout",
		newCorpusListCmd(c), newCorpusImportCmd(c))
}

// registry opens the problem registry (built-ins plus imports in --db).
func (c *cli) registry() (*corpus.Registry, func(), error) {
	a := c.host()
	reg := a.Registry()
	if reg == nil {
		a.Close()
		return nil, nil, errors.New("corpus: the database is unavailable (see --db)")
	}
	return reg, a.Close, nil
}

func newCorpusListCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the problems: bundled ones and imported KernelBench files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, done, err := c.registry()
			if err != nil {
				return err
			}
			defer done()
			ps, err := reg.List(context.Background())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ps)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDTYPE\tSTARTS\tDESCRIPTION")
			for _, p := range ps {
				desc := p.Description
				if p.Path != "" {
					desc = p.Path
				}
				if len(desc) > 70 {
					desc = desc[:67] + "..."
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Dtype, strings.Join(sortedKeys(p.Starts), ","), desc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the problems as JSON")
	return cmd
}

func newCorpusImportCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "import-kernelbench DIR",
		Short: "Register a KernelBench checkout's problems (by reference, not copied)",
		Long: `Register every level's problems of a KernelBench checkout (DIR is the
checkout or its KernelBench/ folder), so that they can be named like bundled
problems, e.g. kernelbench/level1/19_ReLU.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one DIR (a KernelBench checkout, or its KernelBench/ folder), got %d arguments", len(args))
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, done, err := c.registry()
			if err != nil {
				return err
			}
			defer done()
			ps, err := reg.ImportKernelBench(context.Background(), args[0])
			if err != nil {
				return err
			}
			levels := map[int]int{}
			for _, p := range ps {
				levels[p.Level]++
			}
			stdout := cmd.OutOrStdout()
			fmt.Fprintf(stdout, "imported %d KernelBench problems", len(ps))
			for l := 1; l <= 4; l++ {
				if levels[l] > 0 {
					fmt.Fprintf(stdout, ", level %d: %d", l, levels[l])
				}
			}
			fmt.Fprintln(stdout, "\nuse them by name, e.g. kernelbench/level1/19_ReLU")
			return nil
		},
	}
}

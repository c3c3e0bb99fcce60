package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"
)

func corpusCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: corpus list [--json] | corpus import-kernelbench DIR")
	}
	a := newApp(g, logger)
	defer a.close()
	reg := a.registry()
	if reg == nil {
		return errors.New("corpus: the database is unavailable (see --db)")
	}
	ctx := context.Background()
	switch args[0] {
	case "list":
		ps, err := reg.List(ctx)
		if err != nil {
			return err
		}
		if len(args) > 1 && args[1] == "--json" {
			return printJSON(stdout, ps)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
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
	case "import-kernelbench":
		if len(args) != 2 {
			return errors.New("usage: corpus import-kernelbench DIR (a KernelBench checkout, or its KernelBench/ folder)")
		}
		ps, err := reg.ImportKernelBench(ctx, args[1])
		if err != nil {
			return err
		}
		levels := map[int]int{}
		for _, p := range ps {
			levels[p.Level]++
		}
		fmt.Fprintf(stdout, "imported %d KernelBench problems", len(ps))
		for l := 1; l <= 4; l++ {
			if levels[l] > 0 {
				fmt.Fprintf(stdout, ", level %d: %d", l, levels[l])
			}
		}
		fmt.Fprintln(stdout, "\nuse them by name, e.g. kernelbench/level1/19_ReLU")
		return nil
	}
	return fmt.Errorf("corpus %s: unknown (want list or import-kernelbench)", args[0])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

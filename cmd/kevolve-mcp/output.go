package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/spec"
)

// Helpers the commands share: output, progress, cancellation, completion.

// signalContext is cancelled by Ctrl-C, so a long job stops its children.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stageProgress prints a long job's stages on stderr, one line each.
func stageProgress(w io.Writer) func(stage string, done, total int) {
	t0 := time.Now()
	last := ""
	return func(stage string, done, total int) {
		if stage == last {
			return
		}
		last = stage
		if total > 0 {
			fmt.Fprintf(w, "  [%5.1fs] %s (%d/%d)\n", time.Since(t0).Seconds(), stage, done, total)
			return
		}
		fmt.Fprintf(w, "  [%5.1fs] %s\n", time.Since(t0).Seconds(), stage)
	}
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// completeReference completes --ref (and --problem) with the bundled problem
// names that match what was typed, and falls back to file names otherwise:
// a reference is either.
func completeReference(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var names []cobra.Completion
	for _, p := range corpus.List() {
		if strings.HasPrefix(p.Name, toComplete) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeSpecKey completes a device key of the spec table (h100-sxm,
// mi300x, ...), each with its full name.
func completeSpecKey(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var keys []cobra.Completion
	for _, r := range spec.All() {
		keys = append(keys, cobra.CompletionWithDesc(r.Key, r.Name))
	}
	return keys, cobra.ShellCompDirectiveNoFileComp
}

// completeRunID completes a run id from the database the command would
// open (--db), newest first, each with its problem and status. Nothing is
// created: without a database there is nothing to complete.
func completeRunID(c *cli) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if _, err := os.Stat(c.g.db); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		h := c.host()
		defer h.Close()
		st, err := h.Store(context.Background())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		runs, _ := st.Runs(context.Background())
		var out []cobra.Completion
		for _, r := range runs {
			if strings.HasPrefix(r.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(r.ID, r.Problem.Name+", "+string(r.Status)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

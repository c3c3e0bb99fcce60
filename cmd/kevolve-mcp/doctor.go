package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
	"github.com/kevolve/kevolve-mcp/retrieval"
)

func init() { register(newDoctorCmd) }

// doctor prints what was found. It exits 0 without a GPU: a machine with
// none is a supported configuration, and the table says what is missing.
func newDoctorCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "What hardware, toolchains and sandbox layers were found",
		Long: `Report the CPU, GPUs, drivers, Python and torch, and the compilers and
profilers found, with what is missing and how to get it; then the sandbox
layers candidate code runs under on this host (entered for real in a
throwaway process), and what the host loses without each missing one. A
machine without a GPU is a supported configuration: doctor exits 0 there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fts5Check(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: %v\n", err)
			}
			r := device.Discover(context.Background(), device.Options{Python: c.g.python})
			layers := sandboxLayers(cmd.Context(), c.g.python)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					device.Report
					Sandbox []sandbox.Layer `json:"sandbox"`
				}{r, layers})
			}
			if err := device.WriteTable(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return sandbox.WriteTable(cmd.OutOrStdout(), layers)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the structured report")
	return cmd
}

// sandboxLayers probes the sandbox with the evaluation's Python; a probe
// that cannot run reports every Python-side layer missing, with why.
func sandboxLayers(ctx context.Context, python string) []sandbox.Layer {
	if python == "" {
		python = toolchain.Python()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rep, err := worker.ProbeSandbox(ctx, python, "")
	if err != nil {
		rep = sandbox.Report{Missing: map[string]string{"all": err.Error()}}
	}
	return rep.Merge()
}

// fts5Check probes an in-memory database: the binary's SQLite either has
// FTS5 (built with the sqlite_fts5 tag) or the knowledge base is off.
func fts5Check() error {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	return retrieval.FTS5Available(context.Background(), db)
}

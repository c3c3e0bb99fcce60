package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
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
throwaway process), and what the host loses without each missing one; then
the jail of a process a profiler launches (profile_kernel, the own-work
check), under each kind of profiler, entered the same way. A machine
without a GPU is a supported configuration: doctor exits 0 there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fts5Check(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: %v\n", err)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			r := harness.Doctor(ctx, c.g.python)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return r.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the structured report")
	return cmd
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

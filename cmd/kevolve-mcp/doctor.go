package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/retrieval"
)

func init() { register(newDoctorCmd) }

// doctor prints what was found. It exits 0 without a GPU: a machine with
// none is a supported configuration, and the table says what is missing.
func newDoctorCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "What hardware and toolchains were found",
		Long: `Report the CPU, GPUs, drivers, Python and torch, and the compilers and
profilers found, with what is missing and how to get it. A machine without
a GPU is a supported configuration: doctor exits 0 there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fts5Check(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: %v\n", err)
			}
			r := device.Discover(context.Background(), device.Options{Python: c.g.python})
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return device.WriteTable(cmd.OutOrStdout(), r)
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

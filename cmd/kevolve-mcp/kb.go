package main

import (
	"context"
	"io"
	"os"

	"github.com/kevolve/kevolve-mcp/retrieval"
)

// kb runs `kevolve-mcp kb search|list`; global --kb directories are added to
// the ones given after the subcommand.
func kb(g globalFlags, args []string, stdout io.Writer) error {
	db, err := openDB(g.db)
	if err != nil {
		return err
	}
	defer db.Close()
	emb, err := retrieval.ParseEmbedder(g.embedder, os.Getenv)
	if err != nil {
		return err
	}
	for _, d := range g.kbDirs {
		args = append(args, "--kb", d)
	}
	return retrieval.KBCommand(context.Background(), db, emb, args, stdout)
}

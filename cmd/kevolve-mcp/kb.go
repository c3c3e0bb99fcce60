package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/kevolve/kevolve-mcp/retrieval"
)

// kb runs `kevolve-mcp kb search|list`; global --kb directories are added to
// the ones given after the subcommand.
func kb(g globalFlags, logger *slog.Logger, args []string, stdout io.Writer) error {
	a := newApp(g, logger)
	defer a.close()
	if err := a.openDB(); err != nil {
		return err
	}
	emb, err := retrieval.ParseEmbedder(g.embedder, os.Getenv)
	if err != nil {
		return err
	}
	for _, d := range g.kbDirs {
		args = append(args, "--kb", d)
	}
	return retrieval.KBCommand(context.Background(), a.db, emb, args, stdout)
}

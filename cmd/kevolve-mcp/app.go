package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/tools"
)

// host is this process as the global flags describe it (search/launch opens its
// parts on demand: the database, the evaluator, the knowledge index).
func (c *cli) host() *launch.Host {
	return launch.NewHost(launch.HostConfig{DB: c.g.db, Python: c.g.python, KBDirs: c.g.kbDirs, Embedder: c.g.embedder,
		HostMemGiB: c.g.hostMemGiB, Log: c.logger})
}

// defaultDBPath is $XDG_DATA_HOME/kevolve/kevolve.db (~/.local/share when unset).
func defaultDBPath() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "kevolve", "kevolve.db")
}

// openSession opens what a command on the database needs: the host, a
// context cancelled on SIGINT or SIGTERM, and the database. cleanup
// cancels the context and closes the host (its evaluator, the database);
// on an error it has run already.
func (c *cli) openSession() (ctx context.Context, h *launch.Host, cleanup func(), err error) {
	h = c.host()
	ctx, cancel := signalContext()
	cleanup = func() {
		cancel()
		h.Close()
	}
	if err := h.OpenDB(); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	return ctx, h, cleanup, nil
}

// evaluate runs one evaluation through the service, as run_kernel does.
func evaluate(ctx context.Context, h *launch.Host, in tools.RunKernelInput, progress func(string, int, int)) (harness.Result, error) {
	p, c, o, err := in.Request(ctx, h.Resolver())
	if err != nil {
		return harness.Result{}, err
	}
	ev, err := h.Evaluator()
	if err != nil {
		return harness.Result{}, err
	}
	o.Progress = progress
	return ev.Evaluate(ctx, p, c, nil, o)
}

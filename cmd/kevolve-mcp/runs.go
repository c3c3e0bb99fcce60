package main

import (
	"context"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// runManager wires the server's search runs: the store in the one
// database, runs assembled by search/launch as the CLI assembles them
// (evaluator with SOL figures when the device has ceilings, operators with
// their full context, memory seeding and write-back), a fleet's evaluator
// when the server coordinates one, and reports beside the database as the
// CLI writes them.
func (a *app) runManager(ctx context.Context, rf serverFleet) (*runs.Manager, error) {
	if err := a.openDB(); err != nil {
		return nil, err
	}
	st, err := store.New(ctx, a.db)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Dir(a.g.db)
	l := a.launcher(st, nil, rf.remote)
	o := runs.Options{
		Store:  st,
		Launch: l,
		Report: func(ctx context.Context, _ search.Store, id string) (string, error) {
			return l.Report(ctx, id, filepath.Join(dataDir, "runs", id))
		},
		WorkDir:  filepath.Join(dataDir, "mcp"),
		Parallel: rf.parallel,
		Fleet:    rf.status,
		Log:      a.log,
	}
	if rf.evaluator != nil {
		o.Evaluator = func(context.Context) (search.Evaluator, error) { return rf.evaluator, nil }
	}
	return runs.New(o)
}

// serverFleet is what the run manager takes from a fleet the server
// coordinates; the zero value is none (runs evaluate in process).
type serverFleet struct {
	evaluator search.Evaluator
	parallel  func(target string) int
	status    func(ctx context.Context) (*fleet.FleetStatus, error)
	remote    bool // its workers run elsewhere: targets are theirs, not this host's
}

// runFleet wires fl (nil = none) into the run manager: its evaluator,
// the fleet's capacity as runs' default parallelism, and its status.
func runFleet(c *cli, a *app, fl *fleet.Fleet) serverFleet {
	if fl == nil {
		return serverFleet{}
	}
	return serverFleet{
		evaluator: fl.Evaluator,
		remote:    c.fleet.remote(),
		parallel: func(target string) int {
			n, err := c.fleet.parallelism(0, target, a.localGPUs)
			if err != nil {
				return 1
			}
			return n
		},
		status: func(ctx context.Context) (*fleet.FleetStatus, error) { return fleet.Snapshot(ctx, fl.Queue) },
	}
}

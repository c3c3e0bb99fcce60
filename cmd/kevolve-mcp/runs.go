package main

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// runManager wires the server's search runs: the store in the one
// database, the evaluation service (built on first use, with SOL figures
// when the device has ceilings), corpus problems, the server-side
// operators, and reports beside the database as the CLI writes them.
func (a *app) runManager(ctx context.Context, rf serverFleet) (*runs.Manager, error) {
	if err := a.openDB(); err != nil {
		return nil, err
	}
	st, err := store.New(ctx, a.db)
	if err != nil {
		return nil, err
	}
	reg := a.registry()
	dataDir := filepath.Dir(a.g.db)
	var once sync.Once
	var adapter *harnesseval.Adapter
	var evErr error
	evaluator := func(ctx context.Context) (search.Evaluator, error) {
		if rf.evaluator != nil {
			return rf.evaluator, nil
		}
		once.Do(func() {
			ev, err := a.evaluator()
			if err != nil {
				evErr = err
				return
			}
			adapter = &harnesseval.Adapter{Ev: ev}
			if c, err := sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), ""); err == nil {
				adapter.Ceilings = &c
			} else {
				a.log.Info("search runs get no speed-of-light figures (run `kevolve-mcp calibrate` on a CPU)", "err", err)
			}
		})
		if evErr != nil {
			return nil, evErr
		}
		return adapter, nil
	}
	return runs.New(runs.Options{
		Store:     st,
		Evaluator: evaluator,
		Resolve: func(ctx context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			s.CorpusRoot = corpusRoot()
			return engine.ResolveProblem(ctx, reg, s)
		},
		ResolveTarget: func(ctx context.Context, s string) (string, error) {
			ev, err := a.evaluator()
			if err != nil {
				return "", err
			}
			return resolveTarget(ctx, ev, s, rf.remote)
		},
		Devices: func(ctx context.Context, target string) []string {
			return a.devices.Get(ctx, false).DeviceNames(target)
		},
		Operator: operator.ByName,
		Report: func(ctx context.Context, st search.Store, id string) (string, error) {
			var ceil *sol.Ceilings
			if c, err := sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), ""); err == nil {
				ceil = &c
			}
			return engine.WriteReport(ctx, st, id, filepath.Join(dataDir, "runs", id), ceil)
		},
		WorkDir:  filepath.Join(dataDir, "mcp"),
		Parallel: rf.parallel,
		Fleet:    rf.status,
		Log:      a.log,
	})
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

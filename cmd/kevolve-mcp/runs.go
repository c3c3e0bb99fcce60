package main

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// runManager wires the server's search runs: the store in the one
// database, the evaluation service (built on first use, with SOL figures
// when the device has ceilings), corpus problems, the server-side
// operators, and reports beside the database as the CLI writes them.
func (a *app) runManager(ctx context.Context) (*runs.Manager, error) {
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
		DetectTarget: func(ctx context.Context) string {
			if rep := a.devices.Get(ctx, false); rep.Python != nil && rep.Python.CUDAUsable {
				return "nvidia"
			}
			return "cpu"
		},
		Devices: func(ctx context.Context, target string) []string {
			rep := a.devices.Get(ctx, false)
			if target == "cpu" {
				return []string{rep.CPU.Model}
			}
			var names []string
			for _, gpu := range rep.GPUs {
				names = append(names, gpu.Name)
			}
			return names
		},
		Operator: operator.ByName,
		Report: func(ctx context.Context, st search.Store, id string) (string, error) {
			var ceil *sol.Ceilings
			if c, err := sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), ""); err == nil {
				ceil = &c
			}
			return engine.WriteReport(ctx, st, id, filepath.Join(dataDir, "runs", id), ceil)
		},
		WorkDir: filepath.Join(dataDir, "mcp"),
		Log:     a.log,
	})
}

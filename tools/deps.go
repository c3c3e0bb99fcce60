package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// ServerOptions are the server's own settings beside the host's.
type ServerOptions struct {
	// Workspaces are the folders compile_kernel reads paths from.
	Workspaces []string
	// Fleet, when set, is a fleet the server coordinates: its search runs
	// are evaluated by the workers. Remote says they run on other hosts,
	// so targets are theirs, not this host's.
	Fleet  *fleet.Options
	Remote bool
}

// OpenDeps opens what the tools call into, from h. A part that cannot
// open (a bad --kb directory, an unwritable database, no Python) is logged
// and its tools answer with that error, rather than taking the whole
// server down. A fleet that cannot start is an error, since it was asked
// for. The returned func pauses the runs, stops the fleet and closes h.
func OpenDeps(ctx context.Context, h *launch.Host, o ServerOptions) (Deps, func(), error) {
	logger := h.Log()
	d := Deps{
		Logger:  logger,
		Devices: h.Devices(),
		Trace:   sol.TraceOptions{Python: h.Python()},
		Profile: profile.Options{Python: h.Python()},
	}
	d.Workspace = compile.Roots(o.Workspaces) // what compile_kernel may read by path
	if err := h.OpenDB(); err != nil {
		logger.Error("database unavailable: knowledge search, caches and calibration are off", "err", err)
	} else if err := retrieval.FTS5Available(ctx, h.DB()); err != nil {
		logger.Warn("built without FTS5", "err", err)
	}
	if ix, err := h.Knowledge(ctx); err != nil {
		logger.Error("knowledge index unavailable", "err", err)
	} else {
		d.Knowledge = ix
	}
	if ev, err := h.Evaluator(); err != nil {
		logger.Error("evaluator unavailable: run_kernel is off", "err", err)
	} else {
		d.Evaluator = ev
		d.Profile.PyDir = ev.PyDir()
	}
	d.Resolve = h.Resolver()
	d.Ceilings = h.Ceilings
	fl, closeAll, err := serverFleet(ctx, h, o)
	if err != nil {
		return d, nil, err
	}
	if m, err := runManager(ctx, h, o, fl); err != nil {
		logger.Error("search store unavailable: evolve tools are off", "err", err)
	} else {
		// Runs pause (and record it) before the fleet stops and the
		// database closes.
		closeRest := closeAll
		d.Runs, closeAll = m, func() { m.Close(); closeRest() }
	}
	d.Model = runs.ModelService(h)
	return d, closeAll, nil
}

// serverFleet starts the fleet o asks for (nil: none) and returns it with
// the func that stops it and closes h.
func serverFleet(ctx context.Context, h *launch.Host, o ServerOptions) (*fleet.Fleet, func(), error) {
	if o.Fleet == nil {
		return nil, h.Close, nil
	}
	if h.DB() == nil {
		h.Close()
		return nil, nil, errors.New("a fleet needs the database (see the error above)")
	}
	fl, err := runs.StartFleet(ctx, h, *o.Fleet, "auto")
	if err != nil {
		h.Close()
		return nil, nil, fmt.Errorf("fleet: %w", err)
	}
	h.Log().Info("search runs are evaluated by the fleet", "coordinator", fl.URL, "workers", o.Fleet.Workers)
	return fl, func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fl.Close(sctx)
		h.Close()
	}, nil
}

// runManager wires the server's search runs: the store in the one
// database, runs assembled by search/launch as the CLI assembles them
// (evaluator with SOL figures when the device has ceilings, operators with
// their full context, memory seeding and write-back), a fleet's evaluator
// (its capacity as runs' default parallelism, its status) when the server
// coordinates one, and reports beside the database as the CLI writes them.
func runManager(ctx context.Context, h *launch.Host, o ServerOptions, fl *fleet.Fleet) (*runs.Manager, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	l := h.Launcher(st, nil, fl != nil && o.Remote)
	ro := runs.Options{
		Store:  st,
		Launch: l,
		Report: func(ctx context.Context, _ search.Store, id string) (string, error) {
			return l.Report(ctx, id, filepath.Join(h.DataDir(), "runs", id))
		},
		WorkDir: filepath.Join(h.DataDir(), "mcp"),
		Log:     h.Log(),
	}
	if fl != nil {
		ro.Evaluator = func(context.Context) (search.Evaluator, error) { return fl.Evaluator, nil }
		ro.Parallel = func(target string) int {
			n, err := runs.Parallelism(0, target, o.Fleet, h.LocalGPUs)
			if err != nil {
				return 1
			}
			return n
		}
		ro.Fleet = func(ctx context.Context) (*fleet.FleetStatus, error) { return fleet.Snapshot(ctx, fl.Queue) }
	}
	return runs.New(ro)
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	_ "github.com/mattn/go-sqlite3" // the one SQLite file every package migrates its tables into

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/tools"
)

// app holds what the server and the subcommands share, opened on demand.
type app struct {
	g       globalFlags
	log     *slog.Logger
	python  string
	devices *device.Cache
	db      *sql.DB
	ev      *harness.Evaluator
	reg     *corpus.Registry
	cal     *sol.FirstUse // calibrates an uncalibrated CPU once, on first use
	calOnce sync.Once     // concurrent first tool calls must share one calibrator
}

func newApp(g globalFlags, logger *slog.Logger) *app {
	py := g.python
	if py == "" {
		py, _ = toolchain.FindPython()
	}
	if py != "" {
		// Every package that starts Python reads the same variable, so the
		// --python flag reaches them all.
		os.Setenv(toolchain.EnvPython, py)
	}
	return &app{g: g, log: logger, python: py, devices: device.NewCache(device.Options{Python: py})}
}

func (a *app) close() {
	if a.ev != nil {
		a.ev.Close()
	}
	if a.db != nil {
		a.db.Close()
	}
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

// openDB opens the one SQLite file, as the search store opens it (WAL so
// the MCP server and a CLI run read while another writes, a busy timeout,
// and the retry when several processes create it at once).
func (a *app) openDB() error {
	if a.db != nil {
		return nil
	}
	db, err := store.Open(a.g.db)
	if err != nil {
		return err
	}
	a.db = db
	return nil
}

// openSession opens what a command on the database needs: the app, a
// context cancelled on SIGINT or SIGTERM, and the database. cleanup
// cancels the context and closes the app (its evaluator, the database); on
// an error it has run already.
func (c *cli) openSession() (ctx context.Context, a *app, db *sql.DB, cleanup func(), err error) {
	a = c.newApp()
	ctx, cancel := signalContext()
	cleanup = func() {
		cancel()
		a.close()
	}
	if err := a.openDB(); err != nil {
		cleanup()
		return nil, nil, nil, nil, err
	}
	return ctx, a, a.db, cleanup, nil
}

func (a *app) knowledge(ctx context.Context) (*retrieval.Index, error) {
	if err := a.openDB(); err != nil {
		return nil, err
	}
	emb, err := retrieval.ParseEmbedder(a.g.embedder, os.Getenv)
	if err != nil {
		return nil, err
	}
	var sources []retrieval.Source
	for _, dir := range a.g.kbDirs {
		sources = append(sources, retrieval.DirSource(dir))
	}
	sources = memorySources(a.g, sources) // the search's own winners (operators.go)
	return retrieval.Open(ctx, a.db, emb, sources...)
}

// evaluator starts nothing: the Python worker starts on the first evaluation.
func (a *app) evaluator() (*harness.Evaluator, error) {
	if a.ev != nil {
		return a.ev, nil
	}
	if a.python == "" {
		return nil, fmt.Errorf("no Python with torch found: set --python or KEVOLVE_PYTHON, or run `make venv`")
	}
	cfg := harness.EvalConfig{Python: a.python, Logger: a.log, HostMemLimit: harness.HostMemLimitGiB(a.g.hostMemGiB)}
	if a.openDB() == nil {
		cfg.DB = a.db
	}
	ev, err := harness.NewEvaluator(cfg)
	if err != nil {
		return nil, err
	}
	a.ev = ev
	return ev, nil
}

// corpusRoot is where built-in problems are written for the harness to read.
func corpusRoot() string { return filepath.Join(toolchain.CacheDir(), "corpus") }

// localGPUs is how many GPUs this host has (discovery is cached).
func (a *app) localGPUs() int { return len(a.devices.Get(context.Background(), false).GPUs) }

func (a *app) registry() *corpus.Registry {
	if a.reg == nil && a.openDB() == nil {
		if reg, err := corpus.NewRegistry(a.db); err == nil {
			a.reg = reg
		} else {
			a.log.Warn("KernelBench imports unavailable", "err", err)
		}
	}
	return a.reg
}

// resolver resolves corpus names: built-ins, and KernelBench imports when
// the database opens.
func (a *app) resolver() problem.Resolver {
	return corpus.Resolver(a.registry(), corpusRoot())
}

// evaluate runs one evaluation through the service, as run_kernel does.
func (a *app) evaluate(ctx context.Context, in tools.RunKernelInput, progress func(string, int, int)) (harness.Result, error) {
	p, err := in.Problem(ctx, a.resolver())
	if err != nil {
		return harness.Result{}, err
	}
	c, err := problem.ParseCandidate(in.Candidate, in.CandidateSource)
	if err != nil {
		return harness.Result{}, err
	}
	ev, err := a.evaluator()
	if err != nil {
		return harness.Result{}, err
	}
	o := in.Options()
	o.Progress = progress
	return ev.Evaluate(ctx, p, c, nil, o)
}

package launch

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
	hostdevice "github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// HostConfig is what a front end's global settings say about this
// process: where the database is, which Python, which knowledge.
type HostConfig struct {
	DB       string   // the SQLite file that holds every table
	Python   string   // the interpreter asked for ("" = found)
	KBDirs   []string // extra knowledge folders
	Embedder string   // the knowledge embedder spec
	// HostMemGiB is one evaluation's host memory (0 the harness default, < 0 no limit).
	HostMemGiB float64
	Log        *slog.Logger
}

// Host holds what the CLI's commands and the server share, opened on
// demand: the database, the evaluation service, the device cache, the
// corpus registry and the knowledge index. One front end builds one and
// closes it; the search's launcher, the server's tools and the commands
// all take their parts from it, so each is assembled one way.
type Host struct {
	cfg     HostConfig
	python  string
	devices *hostdevice.Cache
	db      *sql.DB
	ev      *harness.Evaluator
	reg     *corpus.Registry
	cal     *sol.FirstUse // calibrates an uncalibrated CPU once, on first use
	calOnce sync.Once     // concurrent first tool calls must share one calibrator
}

// NewHost starts nothing: each part opens when first asked for.
func NewHost(cfg HostConfig) *Host {
	py := cfg.Python
	if py == "" {
		py, _ = toolchain.FindPython()
	}
	if py != "" {
		// Every package that starts Python reads the same variable, so the
		// --python flag reaches them all.
		os.Setenv(toolchain.EnvPython, py)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Host{cfg: cfg, python: py, devices: hostdevice.NewCache(hostdevice.Options{Python: py})}
}

// Close ends the evaluation service and closes the database.
func (h *Host) Close() {
	if h.ev != nil {
		h.ev.Close()
	}
	if h.db != nil {
		h.db.Close()
	}
}

// Config is the settings the host was made with.
func (h *Host) Config() HostConfig { return h.cfg }

// Python is the interpreter with torch ("" = none found).
func (h *Host) Python() string { return h.python }

// Devices is this host's device discovery (cached).
func (h *Host) Devices() *hostdevice.Cache { return h.devices }

// Log is the host's logger.
func (h *Host) Log() *slog.Logger { return h.cfg.Log }

// DataDir is the folder of the database: runs, reports, knowledge and
// fleet logs go beside it.
func (h *Host) DataDir() string { return filepath.Dir(h.cfg.DB) }

// OpenDB opens the one SQLite file, as the search store opens it (WAL so
// the MCP server and a CLI run read while another writes, a busy timeout,
// and the retry when several processes create it at once).
func (h *Host) OpenDB() error {
	if h.db != nil {
		return nil
	}
	db, err := store.Open(h.cfg.DB)
	if err != nil {
		return err
	}
	h.db = db
	return nil
}

// DB is the database once OpenDB succeeded, else nil.
func (h *Host) DB() *sql.DB { return h.db }

// Store opens the database and the search store in it.
func (h *Host) Store(ctx context.Context) (*store.SQLite, error) {
	if err := h.OpenDB(); err != nil {
		return nil, err
	}
	return store.New(ctx, h.db)
}

// Knowledge opens the knowledge index: the embedded base, every --kb
// folder and the user's knowledge folder the search writes into.
func (h *Host) Knowledge(ctx context.Context) (*retrieval.Index, error) {
	if err := h.OpenDB(); err != nil {
		return nil, err
	}
	emb, err := retrieval.ParseEmbedder(h.cfg.Embedder, os.Getenv)
	if err != nil {
		return nil, err
	}
	var sources []retrieval.Source
	for _, dir := range h.cfg.KBDirs {
		sources = append(sources, retrieval.DirSource(dir))
	}
	return retrieval.Open(ctx, h.db, emb, h.memorySources(sources)...)
}

// UserKnowledgeDir is where the search writes what it learns (examples/
// documents): beside the database, never the embedded base. The knowledge
// index always includes it once it exists.
func (h *Host) UserKnowledgeDir() string { return filepath.Join(h.DataDir(), "knowledge") }

// memorySources adds the user's knowledge directory to the --kb sources
// when it exists and was not named already.
func (h *Host) memorySources(sources []retrieval.Source) []retrieval.Source {
	dir := h.UserKnowledgeDir()
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return sources
	}
	for _, d := range h.cfg.KBDirs {
		if a, _ := filepath.Abs(d); a == dir {
			return sources
		}
	}
	return append(sources, retrieval.DirSource(dir))
}

// Evaluator starts nothing: the Python worker starts on the first evaluation.
func (h *Host) Evaluator() (*harness.Evaluator, error) {
	if h.ev != nil {
		return h.ev, nil
	}
	if h.python == "" {
		return nil, fmt.Errorf("no Python with torch found: set --python or KEVOLVE_PYTHON, or run `make venv`")
	}
	cfg := harness.EvalConfig{Python: h.python, Logger: h.cfg.Log, HostMemLimit: harness.HostMemLimitGiB(h.cfg.HostMemGiB)}
	if h.OpenDB() == nil {
		cfg.DB = h.db
	}
	ev, err := harness.NewEvaluator(cfg)
	if err != nil {
		return nil, err
	}
	h.ev = ev
	return ev, nil
}

// CorpusRoot is where built-in problems are written for the harness to read.
func CorpusRoot() string { return filepath.Join(toolchain.CacheDir(), "corpus") }

// LocalGPUs is how many GPUs this host has (discovery is cached).
func (h *Host) LocalGPUs() int { return len(h.devices.Get(context.Background(), false).GPUs) }

// Registry is the problem registry (built-ins plus KernelBench imports in
// the database); nil when the database does not open.
func (h *Host) Registry() *corpus.Registry {
	if h.reg == nil && h.OpenDB() == nil {
		if reg, err := corpus.NewRegistry(h.db); err == nil {
			h.reg = reg
		} else {
			h.cfg.Log.Warn("KernelBench imports unavailable", "err", err)
		}
	}
	return h.reg
}

// Resolver resolves corpus names: built-ins, and KernelBench imports when
// the database opens.
func (h *Host) Resolver() problem.Resolver {
	return corpus.Resolver(h.Registry(), CorpusRoot())
}

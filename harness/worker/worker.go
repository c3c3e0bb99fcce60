// Package worker runs jobs in a warm Python process: a parent that imported
// torch (and triton, cupy, numpy where present) once and forks a fresh child
// per job, or hands the job to an idle child that a clean earlier job with
// the same environment left (Job.Reuse). Go owns the parent's process
// group, each job's deadline (the child's process group is killed when it
// passes), the memory limit, the device gate and restarting a parent that
// died.
//
// The files: unpack.go puts the embedded Python (or Config.Source) in the
// cache directory, verify.go checks it against the source's files around
// every job and unpacks it again when it changed, checks.go reads the
// check registry of that tree (checks/), overlay.go lays extra files over
// a tree, process.go starts, restarts and stops
// the parent, events.go is the protocol between Go and the parent, run.go
// readies and sends one job, wait.go waits for its end (deadline, load
// grant, device gate), collect.go reads back what it left, idle.go keeps
// the children that wait for another, folder.go makes a job's folders
// (work/ for the candidate, judge/ for the harness's files), output.go caps
// its log, tree.go kills a process tree, probe.go probes the sandbox that
// py/sandbox.py enters per job.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// ErrWorkerDied is returned for jobs in flight when the parent process died.
var ErrWorkerDied = errors.New("worker: the Python parent process died")

// Config says how to start the parent.
type Config struct {
	Python   string            // interpreter path (required)
	CacheDir string            // root for the unpacked Python files and job dirs; default KEVOLVE_CACHE_DIR or ~/.cache/kevolve
	Env      map[string]string // extra environment for the parent (and so every child)
	Logger   *slog.Logger
	// StartTimeout bounds the parent's imports (7.3 s measured on the GPU box).
	StartTimeout time.Duration
	// Source is the Python tree the worker unpacks, verifies and runs
	// (worker.py, evaluate/main.py, checks/, ...); nil is the embedded one
	// (Embedded). A test overlays a check module of its own this way
	// (Overlay); its check registry must parse (ParseChecks).
	Source fs.FS
}

// Worker is a restartable warm parent. Safe for concurrent use.
type Worker struct {
	cfg    Config
	man    *manifest   // the source's files, hashed once: what the unpacked folder must hold
	checks []CheckInfo // the source's check registry
	pyDir  string
	jobDir string
	log    *slog.Logger

	mu     sync.Mutex
	proc   *proc
	nextID int64
	closed bool

	imu        sync.Mutex // guards idle, idleClosed (idle.go)
	idle       map[string][]*idleChild
	idleClosed bool
}

// New unpacks the Python files (verify.go); the parent starts on the first job (or Start).
func New(cfg Config) (*Worker, error) {
	if cfg.Python == "" {
		return nil, errors.New("worker: no Python interpreter configured")
	}
	if _, err := toolchain.Which(cfg.Python); err != nil {
		return nil, fmt.Errorf("worker: python %q: %w", cfg.Python, err)
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = toolchain.CacheDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 3 * time.Minute
	}
	m, checks, err := source(cfg.Source)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	// A folder that cannot be unpacked now is tried again before the
	// parent starts, and that job's error says why.
	dir, bad, err := unpackFrom(cfg.CacheDir, m)
	if err != nil {
		cfg.Logger.Warn("python worker files could not be unpacked; retrying when the parent starts", "err", err)
	} else if len(bad) > 0 {
		cfg.Logger.Warn("python worker files differed from the embedded ones; unpacked them again", "dir", dir, "files", summarize(bad))
	}
	jobDir := filepath.Join(cfg.CacheDir, "jobs")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: create job dir: %w", err)
	}
	return &Worker{cfg: cfg, man: m, checks: checks, pyDir: dir, jobDir: jobDir, log: cfg.Logger}, nil
}

// source hashes a worker's Python tree (nil: the embedded one) and reads
// its check registry, which must parse before any job runs.
func source(src fs.FS) (*manifest, []CheckInfo, error) {
	var m *manifest
	var err error
	if src == nil {
		m, err = embedded()
	} else {
		m, err = buildManifest(src)
	}
	if err != nil {
		return nil, nil, err
	}
	checks, err := ParseChecks(m.src)
	if err != nil {
		return nil, nil, err
	}
	return m, checks, nil
}

// WithSource returns a new worker like w (the same configuration, nothing
// started) that runs another Python tree: an evaluator built with its
// defaults takes its checks from a test's overlay this way.
func (w *Worker) WithSource(src fs.FS) (*Worker, error) {
	cfg := w.cfg
	cfg.Source = src
	return New(cfg)
}

// SourceHash is the content hash of this worker's Python tree (its
// unpacked folder's name).
func (w *Worker) SourceHash() string { return w.man.hash }

// Checks is this worker's check registry (checks/ of its Python tree).
func (w *Worker) Checks() []CheckInfo { return slices.Clone(w.checks) }

// PyDir is where the Python files were unpacked (on sys.path in the worker).
func (w *Worker) PyDir() string { return w.pyDir }

// Info returns the parent's ready message (versions, import time), starting it if needed.
func (w *Worker) Info(ctx context.Context) (map[string]any, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.info, nil
}

// Start starts the parent now (it otherwise starts on the first job).
func (w *Worker) Start(ctx context.Context) error {
	_, err := w.get(ctx)
	return err
}

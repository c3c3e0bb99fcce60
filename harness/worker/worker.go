// Package worker runs jobs in a warm Python process: a parent that imported
// torch (and triton, cupy, numpy where present) once and forks a fresh child
// per job. Go owns the parent's process group, each job's deadline (the
// child's process group is killed when it passes), the memory limit, the
// device gate and restarting a parent that died.
package worker

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Python side: worker.py (the parent loop), evaluate.py (the evaluation
// job) and the kevolve loader package. "all:" keeps __init__.py.
//
//go:embed all:py
var pyFS embed.FS

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
}

// Job is one unit of work run in a fresh child.
type Job struct {
	Module, Func string            // Python module (in the py dir) and function(args, ctx)
	Args         any               // JSON-encoded as the function's first argument
	Env          map[string]string // set in the child before the function runs
	Timeout      time.Duration     // wall-clock limit for the child (excluding time spent waiting at the gate)
	MemLimit     int64             // bytes of address space beyond the child's start; 0 = none (CUDA needs a huge VA space)
	// Gate is called when the child asks for the device; it blocks until the
	// device is free and returns the release func. Nil grants at once.
	Gate func(ctx context.Context) (release func(), err error)
	// Progress receives the child's progress events; may be nil.
	Progress func(stage string, done, total int)
}

// Outcome is what happened to a job's child.
type Outcome struct {
	Result   json.RawMessage // the function's return value; nil if the child died before writing it
	Code     int             // exit code, -1 if killed by a signal
	Signal   syscall.Signal  // 0 unless killed by a signal
	TimedOut bool
	Stage    string // last progress stage seen
	Log      string // the child's stdout+stderr (trimmed)
	Wall     time.Duration
	Pid      int
}

type event struct {
	Event   string `json:"event"`
	ID      *int64 `json:"id"`
	Pid     int    `json:"pid"`
	Code    *int   `json:"code"`
	Signal  *int   `json:"signal"`
	Stage   string `json:"stage"`
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Message string `json:"message"`
}

type pending struct {
	events chan event
}

// Worker is a restartable warm parent. Safe for concurrent use.
type Worker struct {
	cfg    Config
	pyDir  string
	jobDir string
	log    *slog.Logger

	mu     sync.Mutex
	proc   *proc
	nextID int64
	closed bool
}

// proc is one incarnation of the parent.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	pending map[int64]*pending
	pmu     sync.Mutex
	dead    chan struct{}
	info    map[string]any
}

// SourceHash is the content hash of the embedded Python files; it names
// the unpacked directory and is part of the harness version.
func SourceHash() string {
	h, _ := hashFS()
	return h
}

func hashFS() (string, error) {
	var files []string
	err := fs.WalkDir(pyFS, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		if !d.IsDir() && !strings.HasSuffix(p, ".pyc") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("walk embedded python: %w", err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := pyFS.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read embedded %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// DefaultCacheDir is KEVOLVE_CACHE_DIR, else ~/.cache/kevolve.
func DefaultCacheDir() string {
	if d := os.Getenv("KEVOLVE_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kevolve")
	}
	return filepath.Join(os.TempDir(), "kevolve-cache")
}

// unpack writes the embedded py folder to <cache>/worker/<hash>, once.
func unpack(cache string) (string, error) {
	hash, err := hashFS()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(cache, "worker", hash)
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create worker cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), hash+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create temp worker dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(pyFS, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "py"), "/")
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return os.MkdirAll(filepath.Join(tmp, rel), 0o755)
		}
		b, err := pyFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("unpack worker python: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("mark worker dir: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another process won the race; its copy is identical.
		if _, serr := os.Stat(filepath.Join(dst, ".complete")); serr == nil {
			return dst, nil
		}
		return "", fmt.Errorf("install worker dir: %w", err)
	}
	return dst, nil
}

// New unpacks the Python files; the parent starts on the first job (or Start).
func New(cfg Config) (*Worker, error) {
	if cfg.Python == "" {
		return nil, errors.New("worker: no Python interpreter configured")
	}
	if _, err := exec.LookPath(cfg.Python); err != nil {
		return nil, fmt.Errorf("worker: python %q: %w", cfg.Python, err)
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 3 * time.Minute
	}
	dir, err := unpack(cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	jobDir := filepath.Join(cfg.CacheDir, "jobs")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: create job dir: %w", err)
	}
	return &Worker{cfg: cfg, pyDir: dir, jobDir: jobDir, log: cfg.Logger}, nil
}

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

func (w *Worker) get(ctx context.Context) (*proc, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("worker: closed")
	}
	if w.proc != nil {
		select {
		case <-w.proc.dead:
			w.log.Warn("python worker parent died; restarting")
			w.proc = nil
		default:
			return w.proc, nil
		}
	}
	p, err := w.startProc(ctx)
	if err != nil {
		return nil, err
	}
	w.proc = p
	return p, nil
}

func (w *Worker) startProc(ctx context.Context) (*proc, error) {
	t0 := time.Now()
	cmd := exec.Command(w.cfg.Python, "-u", filepath.Join(w.pyDir, "worker.py"))
	cmd.Dir = w.pyDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	env := os.Environ()
	env = append(env, "PYTHONPATH="+w.pyDir+prefixIfSet(os.Getenv("PYTHONPATH")),
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	for k, v := range w.cfg.Env {
		env = append(env, k+"="+v)
	}
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker event pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{evW} // fd 3 in the parent
	errR, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stderr: %w", err)
	}
	cmd.Stdout = nil // /dev/null: stray prints of the parent are harmless
	if err := cmd.Start(); err != nil {
		evR.Close()
		evW.Close()
		return nil, fmt.Errorf("start python worker %q: %w", w.cfg.Python, err)
	}
	evW.Close()
	p := &proc{cmd: cmd, stdin: stdin, pending: map[int64]*pending{}, dead: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			w.log.Info("python worker", "stderr", sc.Text())
		}
	}()
	ready := make(chan map[string]any, 1)
	go w.readEvents(p, evR, ready)
	go func() {
		_ = cmd.Wait()
		evR.Close()
	}()
	timer := time.NewTimer(w.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case info := <-ready:
		p.info = info
		w.log.Info("python worker ready", "pid", cmd.Process.Pid, "wall_s", time.Since(t0).Seconds(), "import_s", info["import_s"], "torch", info["torch"],
			"preloaded", info["preloaded"], "libcuda_mapped", info["libcuda_mapped"], "note", info["note"])
		return p, nil
	case <-p.dead:
		return nil, fmt.Errorf("python worker %q exited during start (see its stderr in the log)", w.cfg.Python)
	case <-timer.C:
		killGroup(cmd.Process.Pid)
		return nil, fmt.Errorf("python worker did not become ready within %s", w.cfg.StartTimeout)
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		return nil, fmt.Errorf("python worker start: %w", ctx.Err())
	}
}

func prefixIfSet(s string) string {
	if s == "" {
		return ""
	}
	return string(os.PathListSeparator) + s
}

func (w *Worker) readEvents(p *proc, r io.Reader, ready chan<- map[string]any) {
	defer func() {
		p.pmu.Lock()
		close(p.dead)
		p.pmu.Unlock()
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			w.log.Warn("python worker: bad event line", "line", string(line), "err", err)
			continue
		}
		if ev.Event == "ready" {
			var info map[string]any
			_ = json.Unmarshal(line, &info)
			ready <- info
			continue
		}
		if ev.ID == nil {
			if ev.Event == "error" {
				w.log.Warn("python worker error", "message", ev.Message)
			}
			continue
		}
		p.pmu.Lock()
		pd := p.pending[*ev.ID]
		p.pmu.Unlock()
		if pd == nil {
			continue
		}
		select {
		case pd.events <- ev:
		default:
			// A flood of progress events must never block the reader.
			if ev.Event != "progress" {
				pd.events <- ev
			}
		}
	}
}

func (p *proc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode worker request: %w", err)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to python worker: %w", err)
	}
	return nil
}

// killGroup kills a process group and, in case it has not been set up yet,
// the process itself.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// Run runs one job in a fresh child and waits for it. A Go error means the
// harness failed (could not start Python, parent died); whatever the job's
// code did (crash, hang, exception) is in the Outcome.
func (w *Worker) Run(ctx context.Context, job Job) (*Outcome, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	dir, err := os.MkdirTemp(w.jobDir, fmt.Sprintf("job-%d-", id))
	if err != nil {
		return nil, fmt.Errorf("worker: job dir: %w", err)
	}
	defer os.RemoveAll(dir)
	pd := &pending{events: make(chan event, 64)}
	p.pmu.Lock()
	select {
	case <-p.dead:
		p.pmu.Unlock()
		return nil, ErrWorkerDied
	default:
	}
	p.pending[id] = pd
	p.pmu.Unlock()
	defer func() {
		p.pmu.Lock()
		delete(p.pending, id)
		p.pmu.Unlock()
	}()
	if job.Timeout <= 0 {
		job.Timeout = 10 * time.Minute
	}
	req := map[string]any{"op": "run", "id": id, "module": job.Module, "func": job.Func,
		"args": job.Args, "job_dir": dir, "env": job.Env, "mem_limit": job.MemLimit}
	t0 := time.Now()
	if err := p.send(req); err != nil {
		return nil, err
	}
	out := &Outcome{Code: -1}
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	deadline := time.NewTimer(job.Timeout)
	defer deadline.Stop()
	var gateWait time.Duration
	pid := 0
	finish := func() (*Outcome, error) {
		out.Wall = time.Since(t0) - gateWait
		out.Pid = pid
		out.Log = readLog(filepath.Join(dir, "log.txt"))
		if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil && len(b) > 0 {
			out.Result = b
		}
		return out, nil
	}
	// waitExit waits briefly for the exit event after a kill, so the job dir
	// is not removed under a child still writing.
	waitExit := func() {
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case ev := <-pd.events:
				if ev.Event == "exit" {
					setExit(out, ev)
					return
				}
			case <-p.dead:
				return
			case <-t.C:
				return
			}
		}
	}
	for {
		select {
		case ev := <-pd.events:
			switch ev.Event {
			case "started":
				pid = ev.Pid
			case "progress":
				out.Stage = ev.Stage
				if job.Progress != nil {
					job.Progress(ev.Stage, ev.Done, ev.Total)
				}
			case "gate":
				if job.Gate == nil {
					if err := p.send(map[string]any{"op": "grant", "id": id}); err != nil {
						killGroup(pid)
						return nil, err
					}
					continue
				}
				// The wait for the device does not count against the job's deadline.
				deadline.Stop()
				g0 := time.Now()
				rel, err := job.Gate(ctx)
				gateWait += time.Since(g0)
				if err != nil {
					killGroup(pid)
					waitExit()
					return nil, fmt.Errorf("worker: waiting for the device: %w", err)
				}
				release = rel
				deadline.Reset(job.Timeout - (time.Since(t0) - gateWait))
				if err := p.send(map[string]any{"op": "grant", "id": id}); err != nil {
					killGroup(pid)
					return nil, err
				}
			case "exit":
				setExit(out, ev)
				return finish()
			case "error":
				return nil, fmt.Errorf("python worker: %s", ev.Message)
			}
		case <-deadline.C:
			out.TimedOut = true
			killGroup(pid)
			waitExit()
			return finish()
		case <-ctx.Done():
			killGroup(pid)
			waitExit()
			return nil, fmt.Errorf("worker job: %w", ctx.Err())
		case <-p.dead:
			killGroup(pid)
			return nil, ErrWorkerDied
		}
	}
}

func setExit(out *Outcome, ev event) {
	if ev.Signal != nil {
		out.Signal = syscall.Signal(*ev.Signal)
	} else if ev.Code != nil {
		out.Code = *ev.Code
	}
}

// readLog returns the child's output, trimmed to its head and tail: the
// first lines usually say what was built, the last what failed.
func readLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return Trim(string(b), 2000, 8000)
}

// Trim keeps the first head and last tail bytes of s.
func Trim(s string, head, tail int) string {
	if len(s) <= head+tail {
		return s
	}
	return s[:head] + fmt.Sprintf("\n... [%d bytes trimmed] ...\n", len(s)-head-tail) + s[len(s)-tail:]
}

// Close stops the parent (and with it every child: they die with their parent).
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.proc == nil {
		return nil
	}
	p := w.proc
	w.proc = nil
	_ = p.stdin.Close()
	select {
	case <-p.dead:
	case <-time.After(2 * time.Second):
	}
	killGroup(p.cmd.Process.Pid)
	select {
	case <-p.dead:
	case <-time.After(5 * time.Second):
		w.log.Warn("python worker: event pipe still open 5 s after kill (a grandchild holds it)")
	}
	return nil
}

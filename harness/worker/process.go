package worker

// The parent process's lifecycle: start it (and wait for its "ready"),
// restart it when it died, kill process groups, stop it on Close.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sandbox"
)

// proc is one incarnation of the parent.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex // one request line at a time on stdin
	pending map[int64]*pending
	pmu     sync.Mutex
	dead    chan struct{} // closed when the event pipe ends: the parent is gone
	reaped  chan struct{} // closed when the parent has been waited for
	info    map[string]any
}

// get returns the running parent, starting (or restarting) it if needed.
func (w *Worker) get(ctx context.Context) (*proc, error) {
	// The judge's files are checked before every job, outside the lock
	// (Verify): a parent that loaded changed files is stopped here and a
	// fresh one started below.
	intact := w.intact()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("worker: closed")
	}
	if !intact {
		if err := w.verifyLocked(); err != nil {
			return nil, err
		}
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
	// The parent's environment, and so every job's, is allowlisted: no
	// token or API key of the server's reaches candidate code.
	extra := []string{"PYTHONPATH=" + w.pyDir + prefixIfSet(os.Getenv("PYTHONPATH")),
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}
	for k, v := range w.cfg.Env {
		extra = append(extra, k+"="+v)
	}
	cmd.Env = sandbox.Env(extra...)
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
	p := &proc{cmd: cmd, stdin: stdin, pending: map[int64]*pending{}, dead: make(chan struct{}), reaped: make(chan struct{})}
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
		close(p.reaped)
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

// killGroup kills a process group and, in case it has not been set up yet,
// the process itself.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// Close stops the parent and every process below it (children die with
// their parent; what they started is killed with the tree) and returns
// once it has been reaped.
func (w *Worker) Close() error {
	w.closeIdle()
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
	// The parent is the subreaper of everything its jobs started: its
	// tree is all that is left of them.
	killTree(p.cmd.Process.Pid)
	select {
	case <-p.dead:
	case <-time.After(5 * time.Second):
		w.log.Warn("python worker: event pipe still open 5 s after kill (a grandchild holds it)")
	}
	// Reaped, the parent's resource usage (peak memory) is the caller's to read.
	select {
	case <-p.reaped:
	case <-time.After(5 * time.Second):
	}
	return nil
}

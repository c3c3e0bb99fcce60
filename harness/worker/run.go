package worker

// Running one job: its directory, its arguments file, its deadline (which
// kills the child's process group however early it fires), the device gate
// and the outcome.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

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

// exitWait bounds the wait for a killed child's exit event, so the job dir
// is not removed under a child still writing.
const exitWait = 5 * time.Second

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
	argsFile := filepath.Join(dir, "args.json")
	if err := writeArgs(argsFile, job.Args); err != nil {
		return nil, err
	}
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
	t0 := time.Now()
	if err := p.send(runRequest{Op: "run", ID: id, Module: job.Module, Func: job.Func, ArgsFile: argsFile,
		JobDir: dir, Env: job.Env, MemLimit: job.MemLimit}); err != nil {
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
	// kill ends the child's process group. Go may not know the pid yet (the
	// deadline fired during the fork, or before the "started" event was
	// read), so the parent, which learns it first, is asked too; its cancel
	// follows the run request on the same pipe, so it can never arrive first.
	kill := func() {
		killGroup(pid)
		_ = p.send(idRequest{Op: "cancel", ID: id})
	}
	finish := func() (*Outcome, error) {
		out.Wall = time.Since(t0) - gateWait
		out.Pid = pid
		out.Log = readLog(filepath.Join(dir, "log.txt"))
		if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil && len(b) > 0 {
			out.Result = b
		}
		return out, nil
	}
	// waitExit waits for the exit event after a kill; a "started" event that
	// arrives now is killed on sight.
	waitExit := func() {
		t := time.NewTimer(exitWait)
		defer t.Stop()
		for {
			select {
			case ev := <-pd.events:
				switch ev.Event {
				case "started":
					pid = ev.Pid
					killGroup(pid)
				case "exit":
					setExit(out, ev)
					return
				}
			case <-p.dead:
				return
			case <-t.C:
				w.log.Warn("python worker: no exit event after a kill", "job", id, "pid", pid)
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
					if err := p.send(idRequest{Op: "grant", ID: id}); err != nil {
						kill()
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
					kill()
					waitExit()
					return nil, fmt.Errorf("worker: waiting for the device: %w", err)
				}
				release = rel
				deadline.Reset(job.Timeout - (time.Since(t0) - gateWait))
				if err := p.send(idRequest{Op: "grant", ID: id}); err != nil {
					kill()
					return nil, err
				}
			case "exit":
				setExit(out, ev)
				return finish()
			case "error":
				kill()
				return nil, fmt.Errorf("python worker: %s", ev.Message)
			}
		case <-deadline.C:
			out.TimedOut = true
			kill()
			waitExit()
			return finish()
		case <-ctx.Done():
			kill()
			waitExit()
			return nil, fmt.Errorf("worker job: %w", ctx.Err())
		case <-p.dead:
			killGroup(pid)
			return nil, ErrWorkerDied
		}
	}
}

// writeArgs puts a job's arguments in its directory: the child reads them
// after the fork, so however big they are, the parent never parses them.
func writeArgs(path string, args any) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("worker: job args: %w", err)
	}
	if err := json.NewEncoder(f).Encode(args); err != nil {
		f.Close()
		return fmt.Errorf("worker: encode job args: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("worker: write job args: %w", err)
	}
	return nil
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
	return toolchain.Trim(string(b), 2000, 8000)
}

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
	"strings"
	"syscall"
	"time"
)

// Job is one unit of work run in a fresh child.
type Job struct {
	Module, Func string            // Python module (in the py dir) and function(args, ctx)
	Args         any               // JSON-encoded as the function's first argument
	Env          map[string]string // set in the child before the function runs
	Timeout      time.Duration     // wall-clock limit for the child (excluding time spent waiting at the gate)
	MemLimit     int64             // bytes of address space beyond the child's start; 0 = none (CUDA needs a huge VA space)
	// RSSLimit bounds the anonymous resident memory of the child and its
	// descendants (read every rssPoll); over it, the group is killed and
	// Outcome.RSSExceeded says so. 0 = none.
	RSSLimit int64
	// Gate is called when the child asks for the device; it blocks until the
	// device is free and returns the release func. Nil grants at once.
	Gate func(ctx context.Context) (release func(), err error)
	// Progress receives the child's progress events; may be nil.
	Progress func(stage string, done, total int)
	// Reuse lets the job run in a child that served an earlier job with the
	// same module, function and environment, and keeps its child for a
	// later one if the job function declares it clean (ctx.reusable).
	Reuse bool
	// Network leaves the job's sandbox its network (no empty network
	// namespace, TCP allowed).
	Network bool
	// Writable are folders the job's sandbox may write besides its work/.
	Writable []string
	// KeepIf, when set, has the last word on keeping a child the job
	// function declared clean: a judge outside the child's process may
	// have found what the child could not see in itself.
	KeepIf func(*Outcome) bool
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
	Reused   bool // an idle child that had served earlier jobs ran it
	// Unreported: the child exited without reporting "done", yet left a
	// result file. The job function writes it and then reports; a file
	// without the report was written by something else in the child (a
	// candidate forging a result before os._exit), so Result stays nil.
	Unreported bool
	// RSSExceeded is the resident memory that crossed Job.RSSLimit, 0 if
	// the limit was never crossed.
	RSSExceeded int64
	// Board is what the job last wrote to its status board (job_dir/board,
	// up to boardSize bytes): a child the parent had to kill cannot report,
	// but its board says what it was doing (evaluate: which program ran).
	Board string
	// Sandbox is the sandbox report the job's process wrote when it entered
	// it (worker.py's enter_sandbox): layers active and missing. Nil if it
	// never entered one.
	Sandbox json.RawMessage
	// LogDropped is how many bytes of the child's output were dropped
	// from the log on disk (LogCap).
	LogDropped int64
	// LoadGrant is what the deadline was extended by: the time the job's
	// processes waited for a CPU on a loaded host (see load.go).
	LoadGrant time.Duration
	// Judge is what the job's judge process wrote (job_dir/judge/judge.json,
	// up to judgeSize bytes), nil if nothing: a process of the job's own
	// that the candidate cannot reach (evaluate_judge.py).
	Judge json.RawMessage
}

// judgeSize bounds the judge's report read back.
const judgeSize = 1 << 20

// boardSize bounds the status board a job may keep in its directory.
const boardSize = 64

// exitWait bounds the wait for a killed child's exit event, so the job dir
// is not removed under a child still writing.
const exitWait = 5 * time.Second

// Run runs one job in a fresh child and waits for it. A Go error means the
// harness failed (could not start Python, parent died); whatever the job's
// code did (crash, hang, exception) is in the Outcome. The judge's files
// are verified before and after it (verify.go).
func (w *Worker) Run(ctx context.Context, job Job) (*Outcome, error) {
	out, err := w.run(ctx, job)
	if verr := w.Verify(); verr != nil {
		w.log.Error("python worker files could not be repaired after a job", "err", verr)
	}
	return out, err
}

func (w *Worker) run(ctx context.Context, job Job) (*Outcome, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	key, jobs := "", 1
	var idle *idleChild
	if job.Reuse {
		key = reuseKey(job)
		idle = w.takeIdle(p, key)
	}
	dir, err := w.jobFolder(id, idle)
	if err != nil {
		if idle != nil {
			idle.kill()
		}
		return nil, err
	}
	argsFile := filepath.Join(dir, "judge", "args.json")
	if err := writeArgs(argsFile, job.Args); err != nil {
		if idle != nil {
			idle.kill()
		}
		os.RemoveAll(dir)
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
	// cleanup forgets the job; it runs once the child is gone, which after
	// a "done" event is the reaper's to wait for. A kept child keeps its
	// folder.
	kept := false
	cleanup := func() {
		p.pmu.Lock()
		delete(p.pending, id)
		p.pmu.Unlock()
		if !kept {
			os.RemoveAll(dir)
		}
	}
	var release func()
	handedOff := false
	defer func() {
		if handedOff {
			return
		}
		if release != nil {
			release()
		}
		cleanup()
	}()
	if job.Timeout <= 0 {
		job.Timeout = 10 * time.Minute
	}
	t0 := time.Now()
	req := runRequest{Op: "run", ID: id, Module: job.Module, Func: job.Func, ArgsFile: argsFile,
		JobDir: dir, Env: job.Env, MemLimit: job.MemLimit, Reuse: job.Reuse, Network: job.Network, Writable: job.Writable}
	if idle != nil {
		req.Child, jobs = idle.pid, idle.jobs+1
	}
	if err := p.send(req); err != nil {
		killTree(req.Child) // taken from the pool: nobody else will end it
		return nil, err
	}
	out := &Outcome{Code: -1}
	logc := &logCap{path: filepath.Join(dir, "judge", "log.txt")}
	deadline := time.NewTimer(job.Timeout)
	defer deadline.Stop()
	load := loadAllowance{limit: 10 * job.Timeout}
	var gateWait time.Duration
	pid := 0
	// kill ends the child's process group. Go may not know the pid yet (the
	// deadline fired during the fork, or before the "started" event was
	// read), so the parent, which learns it first, is asked too; its cancel
	// follows the run request on the same pipe, so it can never arrive first.
	kill := func() {
		killTree(pid)
		_ = p.send(idRequest{Op: "cancel", ID: id})
	}
	// finish reads what the job left; its result counts only when the
	// child reported it (the "done" event).
	finish := func(reported bool) (*Outcome, error) {
		out.Wall = time.Since(t0) - gateWait
		out.Pid = pid
		judge := filepath.Join(dir, "judge")
		// Not cut here: the tail the job wrote last is what is read.
		out.Log = readLog(logc.path, logc.truncated)
		out.LogDropped = logc.dropped()
		out.Board = readBoard(filepath.Join(judge, "board"))
		out.Sandbox = readSandbox(filepath.Join(judge, "sandbox.json"))
		out.Judge = readJudge(filepath.Join(judge, "judge.json"))
		if b, err := os.ReadFile(filepath.Join(judge, "result.json")); err == nil && len(b) > 0 {
			if reported {
				out.Result = b
			} else {
				out.Unreported = true
			}
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
					killTree(pid)
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
	// started records which child runs the job.
	started := func(ev event) {
		pid = ev.Pid
		load.start(pid)
		out.Reused = ev.Reused
		if !ev.Reused {
			jobs = 1 // the idle child was gone: a fresh one took the job
		}
	}
	// waitStarted reads up to the parent's "started" event when the child's
	// "done" came first; the parent writes it right after the fork or the
	// hand-over, so only a dead parent makes it time out. The child's own
	// pid (in "done") stands in then.
	waitStarted := func(childPid int) {
		t := time.NewTimer(exitWait)
		defer t.Stop()
		for pid == 0 {
			select {
			case ev := <-pd.events:
				if ev.Event == "started" {
					started(ev)
				}
			case <-p.dead:
				pid = childPid
			case <-t.C:
				w.log.Warn("python worker: no started event for a finished job", "job", id, "pid", childPid)
				pid = childPid
			}
		}
	}
	// Every logPoll the log's cap; every rssPoll the memory limit.
	poll := time.NewTicker(logPoll)
	defer poll.Stop()
	var polls int
	for {
		select {
		case <-poll.C:
			logc.check()
			polls++
			if pid == 0 || job.RSSLimit <= 0 || polls%int(rssPoll/logPoll) != 0 {
				continue
			}
			if rss := treeRSS(pid); rss > job.RSSLimit {
				out.RSSExceeded = rss
				kill()
				waitExit()
				return finish(false)
			}
		case ev := <-pd.events:
			switch ev.Event {
			case "started":
				started(ev)
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
			case "ungate":
				// The child is done with the device (it synchronized and
				// freed its memory there): the next job's device phase
				// overlaps this child's result writing and teardown.
				if release != nil {
					release()
					release = nil
				}
			case "done":
				// result.json is complete; the exit (the driver tearing the
				// CUDA context down) need not hold up the caller.
				out.Code = 0
				if pid == 0 {
					// The child writes "done" itself and the parent writes
					// "started": a quick child can be read first. Which
					// child it was, and whether it was kept, is in "started".
					waitStarted(ev.Pid)
				}
				res, err := finish(true)
				// A kept child must have nothing left below it (it killed
				// what its job started; this checks).
				if ev.Idle && key != "" && pid != 0 && len(except(descendants(pid), judgePid(res.Judge))) == 0 &&
					(job.KeepIf == nil || job.KeepIf(res)) {
					// Kept before Run returns, so a caller's next job finds it.
					kept = true
					w.putIdle(&idleChild{p: p, pid: pid, key: key, jobs: jobs, dir: dir})
					return res, err
				}
				if ev.Idle {
					killTree(pid) // idle although nobody asked, or not clean: not ours to keep
				}
				handedOff = true
				go w.reap(p, pd, id, pid, release, cleanup)
				return res, err
			case "exit":
				setExit(out, ev)
				return finish(false)
			case "error":
				kill()
				return nil, fmt.Errorf("python worker: %s", ev.Message)
			}
		case <-deadline.C:
			if more := load.extend(pid); more > 0 {
				deadline.Reset(more) // the machine's load, not the job's work, took that time
				continue
			}
			out.TimedOut, out.LoadGrant = true, load.granted
			kill()
			waitExit()
			return finish(false)
		case <-ctx.Done():
			kill()
			waitExit()
			return nil, fmt.Errorf("worker job: %w", ctx.Err())
		case <-p.dead:
			killTree(pid)
			return nil, ErrWorkerDied
		}
	}
}

// exitGrace bounds how long a child that reported "done" may take to exit
// before its process group is killed (a variable for the tests).
var exitGrace = 10 * time.Second

// reap waits for the exit of a child that already delivered its result,
// kills its group if the exit does not come within exitGrace (a candidate's
// leftover work stuck on the device), then hands back the device if the
// child still held it and forgets the job.
func (w *Worker) reap(p *proc, pd *pending, id int64, pid int, release func(), cleanup func()) {
	defer func() {
		if release != nil {
			release()
		}
		cleanup()
	}()
	grace := time.NewTimer(exitGrace)
	defer grace.Stop()
	killed := false
	for {
		select {
		case ev := <-pd.events:
			if ev.Event == "exit" { // Run saw "started" before it handed off
				return
			}
		case <-p.dead:
			return
		case <-grace.C:
			if killed {
				w.log.Warn("python worker: no exit event after a kill", "job", id, "pid", pid)
				return
			}
			w.log.Warn("python worker: child delivered its result but did not exit; killing its tree", "job", id, "pid", pid)
			killTree(pid)
			killed = true
			grace.Reset(exitWait)
		}
	}
}

// writeArgs puts a job's arguments in its directory: the child reads them
// after the fork, so however big they are, the parent never parses them.
func writeArgs(path string, args any) error {
	// Readable by the job's sandboxed child: a kept one reads it after it
	// dropped its privileges.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
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

// readBoard reads a job's status board: its text up to the first NUL.
func readBoard(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, boardSize)
	n, _ := f.Read(b)
	s, _, _ := strings.Cut(string(b[:n]), "\x00")
	return strings.TrimSpace(s)
}

// readJudge reads the judge's report: a regular file of at most judgeSize
// bytes, else nil.
func readJudge(path string) json.RawMessage {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > judgeSize {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// readSandbox reads the job's sandbox report (a few hundred bytes; more
// is not the harness's).
func readSandbox(path string) json.RawMessage {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 16<<10)
	n, _ := f.Read(b)
	if n == 0 || !json.Valid(b[:n]) {
		return nil
	}
	return json.RawMessage(b[:n])
}

// judgePid is the pid the job's judge declared in its report (0 if none):
// the one process a kept child may keep below it. The judge's folder is
// out of the candidate's reach, so the candidate cannot name its own.
func judgePid(judge json.RawMessage) int {
	var j struct {
		Pid int `json:"judge_pid"`
	}
	if len(judge) == 0 || json.Unmarshal(judge, &j) != nil {
		return 0
	}
	return j.Pid
}

// except is pids without skip.
func except(pids []int, skip int) []int {
	out := pids[:0:0]
	for _, p := range pids {
		if p != skip {
			out = append(out, p)
		}
	}
	return out
}

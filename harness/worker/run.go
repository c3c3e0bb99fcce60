package worker

// Running one job: the job and its outcome, and the stages before the wait
// (its folder, its arguments file, the request to a fresh or an idle child)
// and after it (handing back the device, forgetting the job). wait.go waits
// for its end, collect.go reads back what it left.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	// IdleMax bounds the children kept idle for this job's reuse key (0:
	// MaxIdlePerKey). A caller that places N jobs on one device at once
	// passes N, so a wave of N evaluations ending together leaves N
	// children for the next wave instead of killing all but a few, each
	// of which the next wave would make again (a CUDA context per child
	// and one per judge, made and torn down by the driver one process at
	// a time across the host's GPUs).
	IdleMax int
	// BuildStages are the progress stages in which the job builds (the
	// candidate's import and constructor): the run-queue wait of its
	// processes there extends the deadline beyond the load grant (build.go).
	BuildStages []string
}

// StageTime is a job's wall time in one of its progress stages, as the Go
// side saw the child's events: outside the device phase, and inside it
// (the job held the device: from the grant to the hand-back).
type StageTime struct {
	Outside, Inside time.Duration
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
	// Emptied: the child reported "done", so the job function had written
	// its result, yet the file was empty when read: something else in the
	// child (a thread of the candidate's, through the descriptor it shares)
	// truncated it, so Result stays nil.
	Emptied bool
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
	// that the candidate cannot reach (evaluate/judge/judge.py).
	Judge json.RawMessage
	// GateWait is how long the job waited for the device (Job.Gate): not
	// part of Wall, nor of its deadline.
	GateWait time.Duration
	// DeviceHeld is how long the job held the device: from each grant to
	// the hand-back ("ungate"), or to the result where the child still
	// held it then (it keeps it until its exit).
	DeviceHeld time.Duration
	// Stages is the job's time per progress stage on Go's clock, split at
	// the device phase's edges: where an evaluation's device phase went,
	// and what ran in it that need not have. "start" is the time from the
	// request to the child's first progress event (the fork, or the hand
	// over to an idle child, and the job's set-up).
	Stages map[string]StageTime
	// Steps is how far each progress stage got (its last done and total):
	// what a job the deadline ended had done (evaluate: correctness
	// trials, timed iterations).
	Steps map[string]Step
	// Figures are the partial figures the progress events carried, per
	// stage and key, the last of each: what a job the deadline ended had
	// measured. The child's own word, as its events are.
	Figures map[string]map[string]json.RawMessage
	// Build is what the job's build stages lost to the host's load and
	// were granted for it (build.go); BuildLoadTimeout: the deadline
	// killed it in a build stage that had lost more than it was granted,
	// so the host, not the candidate, ran its time out.
	Build            BuildGrant
	BuildLoadTimeout bool
	// Cgroup is what the job's cgroup counted (worker.py's sandbox/cgroup.py), nil
	// where it had none: from the parent's "exit" event where Run waited
	// for the exit (a killed or dead child), else from the child's "done".
	Cgroup *CgroupUse
}

// CgroupUse is what a job's cgroup counted: forks its pids.max refused,
// processes the kernel's OOM killer ended at its memory limit (which
// counts the job's tmpfs /tmp and /dev/shm), and its CPU time.
type CgroupUse struct {
	ForksRefused int     `json:"forks_refused"`
	PidsMax      int     `json:"pids_max"`
	OOMKills     int     `json:"oom_kills"`
	MemLimit     int64   `json:"mem_limit"` // 0: none
	MemPeak      int64   `json:"mem_peak"`
	CPUSeconds   float64 `json:"cpu_s"`
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
	reclaim(job.Writable)
	if verr := w.Verify(); verr != nil {
		w.log.Error("python worker files could not be repaired after a job", "err", verr)
	}
	return out, err
}

// jobRun is one job in flight: what its stages share, from the folder it
// was given to the child that ran it.
type jobRun struct {
	w   *Worker
	p   *proc
	ctx context.Context
	job Job
	id  int64

	key  string     // reuseKey, "" unless the job may reuse or leave a child
	idle *idleChild // the idle child that takes the job, nil for a fresh one
	jobs int        // jobs its child will have run, this one included
	dir  string     // the job folder (the idle child's own when it has one)
	pd   *pending

	kept      bool   // the child stays idle with its folder
	handedOff bool   // reap, not run, releases the device and forgets the job
	release   func() // hands the device back; nil while the job does not hold it

	t0       time.Time
	gateWait time.Duration // time spent waiting for the device, not the job's
	// The stage the child is in (its last progress event) since stageAt,
	// and when the device was granted (zero while the job does not hold
	// it): Outcome.Stages and DeviceHeld.
	stage           string
	stageAt, heldAt time.Time
	doneAt          time.Time // when the child reported its result, zero before
	pid             int       // the child's, 0 until the "started" event
	out             *Outcome
	logc            *logCap
	deadline        *time.Timer
	load            loadAllowance
	build           buildAllowance
	polls           int
}

// run is Run without the check of the judge's files. Its stages: ready the
// job (parent, folder, arguments), register it for events, send it to a
// fresh or an idle child, wait for its end, and clean up unless the child
// was kept or reap took over.
func (w *Worker) run(ctx context.Context, job Job) (*Outcome, error) {
	r, err := w.prepare(ctx, job)
	if err != nil {
		return nil, err
	}
	if err := r.register(); err != nil {
		return nil, err
	}
	defer r.end()
	if err := r.send(); err != nil {
		return nil, err
	}
	return r.wait()
}

// prepare gets the running parent, an id, the idle child that may take the
// job and the job's folder with its arguments in it. Nothing refers to the
// job yet, so a failure undoes only what prepare did itself.
func (w *Worker) prepare(ctx context.Context, job Job) (*jobRun, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	if job.Timeout <= 0 {
		job.Timeout = 10 * time.Minute
	}
	r := &jobRun{w: w, p: p, ctx: ctx, job: job, id: id, jobs: 1}
	if job.Reuse {
		r.key = reuseKey(job)
		r.idle = w.takeIdle(p, r.key)
	}
	if r.dir, err = w.jobFolder(id, r.idle); err != nil {
		if r.idle != nil {
			r.idle.kill() // taken from the pool: nobody else will end it
		}
		return nil, err
	}
	if err := writeArgs(r.argsFile(), job.Args); err != nil {
		if r.idle != nil {
			r.idle.kill()
		}
		os.RemoveAll(r.dir)
		return nil, err
	}
	return r, nil
}

// argsFile is where the child reads the job's arguments.
func (r *jobRun) argsFile() string { return filepath.Join(r.dir, "judge", "args.json") }

// register routes the parent's events for the job to it; a parent that
// died already has none to send.
func (r *jobRun) register() error {
	r.pd = &pending{events: make(chan event, 64)}
	r.p.pmu.Lock()
	defer r.p.pmu.Unlock()
	select {
	case <-r.p.dead:
		return ErrWorkerDied
	default:
	}
	r.p.pending[r.id] = r.pd
	return nil
}

// end hands back the device and forgets the job when run returns, unless
// reap took both over (the child delivered but has not exited yet).
func (r *jobRun) end() {
	if r.handedOff {
		return
	}
	if r.release != nil {
		r.release()
	}
	r.cleanup()
}

// cleanup forgets the job; it runs once the child is gone, which after a
// "done" event is the reaper's to wait for. A kept child keeps its folder.
func (r *jobRun) cleanup() {
	r.p.pmu.Lock()
	delete(r.p.pending, r.id)
	r.p.pmu.Unlock()
	if !r.kept {
		os.RemoveAll(r.dir)
	}
}

// send asks the parent to fork a child for the job, or to hand it to the
// idle child; the job's wall time starts here.
func (r *jobRun) send() error {
	r.t0 = time.Now()
	r.stage, r.stageAt = "start", r.t0
	job := r.job
	req := runRequest{Op: "run", ID: r.id, Module: job.Module, Func: job.Func, ArgsFile: r.argsFile(),
		JobDir: r.dir, Env: job.Env, MemLimit: job.MemLimit, Reuse: job.Reuse, Network: job.Network, Writable: job.Writable}
	if r.idle != nil {
		req.Child, r.jobs = r.idle.pid, r.idle.jobs+1
	}
	if err := r.p.send(req); err != nil {
		killTree(req.Child) // taken from the pool: nobody else will end it
		return err
	}
	return nil
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

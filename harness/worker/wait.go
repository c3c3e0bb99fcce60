package worker

// Waiting for a job's end: the child's events (started, progress, the
// device gate, done, exit), its deadline with the load grant, its log cap
// and memory limit, the caller's context and the parent's death.

import (
	"fmt"
	"maps"
	"path/filepath"
	"time"
)

// ending is how a job's wait ends: what Run returns.
type ending struct {
	out *Outcome
	err error
}

// wait runs the job's event loop until the job ends one way or another.
func (r *jobRun) wait() (*Outcome, error) {
	r.out = &Outcome{Code: -1}
	r.logc = &logCap{path: filepath.Join(r.dir, "judge", "log.txt")}
	r.deadline = time.NewTimer(r.job.Timeout)
	defer r.deadline.Stop()
	r.load = loadAllowance{limit: MaxLoadGrant(r.job.Timeout)}
	r.build = newBuildAllowance(r.job.BuildStages, r.job.Timeout)
	defer func() { r.build.leave(r.pid, time.Now()) }() // a job that ended in a build stage leaves the count
	// Every logPoll the log's cap; every rssPoll the memory limit.
	poll := time.NewTicker(logPoll)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
			if out := r.checkLimits(); out != nil {
				return out, nil
			}
		case ev := <-r.pd.events:
			if e := r.handle(ev); e != nil {
				return e.out, e.err
			}
		case <-r.deadline.C:
			if out := r.deadlinePassed(); out != nil {
				return out, nil
			}
		case <-r.ctx.Done():
			r.kill()
			r.waitExit()
			return nil, fmt.Errorf("worker job: %w", r.ctx.Err())
		case <-r.p.dead:
			killTree(r.pid)
			return nil, ErrWorkerDied
		}
	}
}

// checkLimits cuts the log back when it is over its cap and, every rssPoll,
// kills a child over its memory limit: then it returns the outcome.
func (r *jobRun) checkLimits() *Outcome {
	r.logc.check()
	r.polls++
	if r.polls%int(buildSample/logPoll) == 0 {
		r.build.sample(r.pid)
	}
	if r.pid == 0 || r.job.RSSLimit <= 0 || r.polls%int(rssPoll/logPoll) != 0 {
		return nil
	}
	if rss := treeRSS(r.pid); rss > r.job.RSSLimit {
		if rss = treeAnonPSS(r.pid, rss); rss <= r.job.RSSLimit {
			return nil
		}
		r.out.RSSExceeded = rss
		r.kill()
		r.waitExit()
		return r.finish(false)
	}
	return nil
}

// deadlinePassed extends the deadline by the time the job's processes
// waited for a CPU (the machine's load, not the job's work, took it), or
// kills the job and returns its outcome.
func (r *jobRun) deadlinePassed() *Outcome {
	if more := r.load.extend(r.pid); more > 0 {
		r.deadline.Reset(more)
		return nil
	}
	if more := r.build.extend(r.pid, r.load.granted); more > 0 {
		r.deadline.Reset(more)
		return nil
	}
	r.out.TimedOut, r.out.LoadGrant = true, r.load.granted
	r.out.BuildLoadTimeout = r.build.loadTimeout(r.load.granted)
	r.kill()
	r.waitExit()
	return r.finish(false)
}

// handle acts on one of the job's events; non-nil when the job ended.
func (r *jobRun) handle(ev event) *ending {
	switch ev.Event {
	case "started":
		r.started(ev)
	case "progress":
		r.progressed(ev, time.Now())
	case "gate":
		if err := r.grant(); err != nil {
			return &ending{err: err}
		}
	case "ungate":
		// The child is done with the device (it synchronized and freed its
		// memory there): the next job's device phase overlaps this child's
		// result writing and teardown.
		if r.release != nil {
			r.handBack(time.Now())
			r.release()
			r.release = nil
		}
	case "done":
		out, err := r.delivered(ev)
		return &ending{out, err}
	case "exit":
		setExit(r.out, ev)
		return &ending{out: r.finish(false)}
	case "error":
		r.kill()
		return &ending{err: fmt.Errorf("python worker: %s", ev.Message)}
	}
	return nil
}

// started records which child runs the job.
func (r *jobRun) started(ev event) {
	r.pid = ev.Pid
	r.load.start(r.pid)
	r.out.Reused = ev.Reused
	if !ev.Reused {
		r.jobs = 1 // the idle child was gone: a fresh one took the job
	}
}

// grant gives the child the device once Job.Gate lets it have it (at once
// without a gate). The wait for the device does not count against the
// job's deadline. An error has killed the child.
func (r *jobRun) grant() error {
	if r.job.Gate == nil {
		if err := r.p.send(idRequest{Op: "grant", ID: r.id}); err != nil {
			r.kill()
			return err
		}
		return nil
	}
	r.deadline.Stop()
	g0 := time.Now()
	rel, err := r.job.Gate(r.ctx)
	r.gateWait += time.Since(g0)
	if err != nil {
		r.kill()
		r.waitExit()
		return fmt.Errorf("worker: waiting for the device: %w", err)
	}
	r.release = r.logHold(rel)
	r.granted(time.Now())
	r.deadline.Reset(r.job.Timeout - (time.Since(r.t0) - r.gateWait))
	if err := r.p.send(idRequest{Op: "grant", ID: r.id}); err != nil {
		r.kill()
		return err
	}
	return nil
}

// enter starts the child's next progress stage at now.
func (r *jobRun) enter(stage string, now time.Time) {
	r.mark(now)
	r.stage = stage
	r.build.enter(stage, r.pid, now)
}

// granted: the job holds the device from now; the wait before it is the
// current stage's (wait_device), outside the device phase.
func (r *jobRun) granted(now time.Time) {
	r.mark(now)
	r.heldAt = now
}

// handBack: the job's device phase ends at now.
func (r *jobRun) handBack(now time.Time) {
	if r.heldAt.IsZero() {
		return
	}
	r.mark(now)
	r.out.DeviceHeld += now.Sub(r.heldAt)
	r.heldAt = time.Time{}
}

// mark adds the time since the last mark to the current stage, inside the
// device phase or outside it.
func (r *jobRun) mark(now time.Time) {
	if r.stage == "" || r.out == nil {
		return
	}
	if r.out.Stages == nil {
		r.out.Stages = map[string]StageTime{}
	}
	st := r.out.Stages[r.stage]
	if d := now.Sub(r.stageAt); d > 0 {
		if r.heldAt.IsZero() {
			st.Outside += d
		} else {
			st.Inside += d
		}
	}
	r.out.Stages[r.stage] = st
	r.stageAt = now
}

// logHold wraps the device's release to log each device phase at debug
// level: how long the job held the device, and how much of that came
// after its result (a child that could not hand the device back before
// its exit), which is where a sweep's device time can go unseen.
func (r *jobRun) logHold(rel func()) func() {
	granted := time.Now()
	return func() {
		rel()
		after := 0.0
		if !r.doneAt.IsZero() {
			after = time.Since(r.doneAt).Seconds()
		}
		r.w.log.Debug("worker: device phase ended", "job", r.id, "held_s", time.Since(granted).Seconds(), "after_result_s", after)
	}
}

// delivered takes the result of a child that reported "done": result.json
// is complete, and the exit (the driver tearing the CUDA context down) need
// not hold up the caller. The child is kept idle if it declared itself
// clean and nothing is left below it; else reap waits for its exit.
func (r *jobRun) delivered(ev event) (*Outcome, error) {
	r.out.Code = 0
	r.doneAt = time.Now()
	r.out.Cgroup = ev.Cgroup
	if r.pid == 0 {
		// The child writes "done" itself and the parent writes "started":
		// a quick child can be read first. Which child it was, and whether
		// it was kept, is in "started".
		r.waitStarted(ev.Pid)
	}
	res := r.finish(true)
	if ev.Idle && r.keepable(res) {
		// Kept before Run returns, so a caller's next job finds it.
		r.kept = true
		r.w.putIdle(&idleChild{p: r.p, pid: r.pid, key: r.key, jobs: r.jobs, dir: r.dir, max: r.job.IdleMax, env: maps.Clone(r.job.Env)})
		return res, nil
	}
	if ev.Idle {
		killTree(r.pid) // idle although nobody asked, or not clean: not ours to keep
	}
	r.handedOff = true
	go r.reap(r.release, exitGrace)
	return res, nil
}

// keepable says whether a child that went idle may serve a later job: the
// job asked for reuse, and the child must have nothing left below it (it
// killed what its job started; this checks) but the judge and its jail's
// reaper, and the job's KeepIf must agree.
func (r *jobRun) keepable(res *Outcome) bool {
	left := except(descendants(r.pid), judgePid(res.Judge))
	return r.key != "" && r.pid != 0 && len(jailInits(r.pid, left)) == len(left) &&
		(r.job.KeepIf == nil || r.job.KeepIf(res))
}

// kill ends the child's process group. Go may not know the pid yet (the
// deadline fired during the fork, or before the "started" event was read),
// so the parent, which learns it first, is asked too; its cancel follows
// the run request on the same pipe, so it can never arrive first.
func (r *jobRun) kill() {
	killTree(r.pid)
	_ = r.p.send(idRequest{Op: "cancel", ID: r.id})
}

// waitExit waits for the exit event after a kill; a "started" event that
// arrives now is killed on sight.
func (r *jobRun) waitExit() {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	for {
		select {
		case ev := <-r.pd.events:
			switch ev.Event {
			case "started":
				r.pid = ev.Pid
				killTree(r.pid)
			case "exit":
				setExit(r.out, ev)
				return
			}
		case <-r.p.dead:
			return
		case <-t.C:
			r.w.log.Warn("python worker: no exit event after a kill", "job", r.id, "pid", r.pid)
			return
		}
	}
}

// waitStarted reads up to the parent's "started" event when the child's
// "done" came first; the parent writes it right after the fork or the
// hand-over, so only a dead parent makes it time out. The child's own pid
// (in "done") stands in then.
func (r *jobRun) waitStarted(childPid int) {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	for r.pid == 0 {
		select {
		case ev := <-r.pd.events:
			if ev.Event == "started" {
				r.started(ev)
			}
		case <-r.p.dead:
			r.pid = childPid
		case <-t.C:
			r.w.log.Warn("python worker: no started event for a finished job", "job", r.id, "pid", childPid)
			r.pid = childPid
		}
	}
}

// exitGrace bounds how long a child that reported "done" may take to exit
// before its process group is killed (a variable for the tests).
var exitGrace = 10 * time.Second

// reap waits for the exit of a child that already delivered its result,
// kills its group if the exit does not come within grace (a candidate's
// leftover work stuck on the device), then hands back the device if the
// child still held it (release) and forgets the job. Run has returned: the
// job is reap's alone. grace is read by the caller, before Run returns, so
// a test that changes exitGrace after Run races with no reaper.
func (r *jobRun) reap(release func(), grace time.Duration) {
	defer func() {
		if release != nil {
			release()
		}
		r.cleanup()
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	killed := false
	for {
		select {
		case ev := <-r.pd.events:
			if ev.Event == "exit" { // Run saw "started" before it handed off
				return
			}
		case <-r.p.dead:
			return
		case <-t.C:
			if killed {
				r.w.log.Warn("python worker: no exit event after a kill", "job", r.id, "pid", r.pid)
				return
			}
			r.w.log.Warn("python worker: child delivered its result but did not exit; killing its tree", "job", r.id, "pid", r.pid)
			killTree(r.pid)
			killed = true
			t.Reset(exitWait)
		}
	}
}

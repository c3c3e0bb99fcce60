package worker

// Build time is the candidate's only when it is the candidate's (issue 32,
// item 6). A 40-line load_inline timed out after 4 minutes in
// load_candidate on a 16-core host building 16 candidates at once: its
// compilers waited for a CPU most of that time. The load grant (load.go)
// is capped at a tenth of the deadline and counts only live processes,
// while a build's compilers come and go. So while a job is in one of its
// build stages (Job.BuildStages: the candidate's import, its constructor)
// the run-queue wait of every process of its tree is sampled, the
// compilers that have since exited included, and the deadline is extended
// by that wait beyond the load grant, up to MaxBuildGrant: the deadline
// and both grants together stay within BuildDeadlineFactor times the
// timeout. The result says what was granted and why; a job killed in a
// build stage that lost more to the host than it was granted ran out of
// time because of the host, not the candidate (Outcome.BuildLoadTimeout).

import (
	"fmt"
	"sync/atomic"
	"time"
)

// BuildDeadlineFactor bounds a job's deadline with its load and build
// grants: at most this many times its timeout.
const BuildDeadlineFactor = 2.0

// buildSample is how often the build's processes are read (every
// buildSample/logPoll polls): a compiler lives for seconds.
const buildSample = 200 * time.Millisecond

// buildsInFlight counts the jobs of this process (every Worker: they share
// the host's cores) in a build stage now: stated beside a grant.
var buildsInFlight atomic.Int32

// MaxBuildGrant is the most a job's builds are granted beyond its load
// grant: together with MaxLoadGrant, the deadline grows to at most
// BuildDeadlineFactor times the timeout.
func MaxBuildGrant(timeout time.Duration) time.Duration {
	return time.Duration((BuildDeadlineFactor-1)*float64(timeout)) - MaxLoadGrant(timeout)
}

// BuildGrant is what a job's build stages lost to the host and were given.
type BuildGrant struct {
	// Wall is the job's time in its build stages; Lost the run-queue wait
	// its processes (compilers included) accumulated there.
	Wall, Lost time.Duration
	// Granted is the deadline's extension for Lost, beyond the load grant.
	Granted time.Duration
	// Peers is the most other jobs seen building at once.
	Peers int
}

// String states the grant for a result; "" when nothing was lost.
func (g BuildGrant) String() string {
	if g.Lost <= 0 {
		return ""
	}
	return fmt.Sprintf("its build stages ran %.1fs, of which its processes (compilers included) waited %.1fs for a CPU on a loaded host (%d other build(s) in flight at most); %.1fs granted for that beyond the load grant, at most %.0fx the timeout in all",
		g.Wall.Seconds(), g.Lost.Seconds(), g.Peers, g.Granted.Seconds(), BuildDeadlineFactor)
}

// buildAllowance tracks a job's build stages and what they lost.
type buildAllowance struct {
	stages map[string]bool
	limit  time.Duration
	in     bool
	since  time.Time
	seen   map[int]time.Duration // each build process's wait when last read
	g      BuildGrant
}

func newBuildAllowance(stages []string, timeout time.Duration) buildAllowance {
	b := buildAllowance{stages: map[string]bool{}, limit: max(MaxBuildGrant(timeout), 0)}
	for _, s := range stages {
		b.stages[s] = true
	}
	return b
}

// enter follows the job into stage at now: a build stage starts the
// sampling (the tree's waits so far are not the build's), any other ends it.
func (b *buildAllowance) enter(stage string, pid int, now time.Time) {
	building := b.stages[stage]
	if building == b.in {
		return
	}
	if building {
		b.in, b.since, b.seen = true, now, map[int]time.Duration{}
		for _, p := range treePIDs(pid) {
			b.seen[p] = runqueueWait(p)
		}
		b.g.Peers = max(b.g.Peers, int(buildsInFlight.Add(1))-1)
		return
	}
	b.leave(pid, now)
}

// leave ends a build stage at now (also when the job ends in one).
func (b *buildAllowance) leave(pid int, now time.Time) {
	if !b.in {
		return
	}
	b.sample(pid)
	b.g.Wall += now.Sub(b.since)
	b.in = false
	buildsInFlight.Add(-1)
}

// sample adds the run-queue wait the build's processes accumulated since
// the last read; a process first seen now started in the build stage, so
// all of its wait is the build's.
func (b *buildAllowance) sample(pid int) {
	if !b.in || pid <= 0 {
		return
	}
	b.g.Peers = max(b.g.Peers, int(buildsInFlight.Load())-1)
	for _, p := range treePIDs(pid) {
		w := runqueueWait(p)
		if d := w - b.seen[p]; d > 0 {
			b.g.Lost += d
		}
		b.seen[p] = w
	}
}

// extend returns how much longer the job may run for what its builds lost
// and the load grant (loadGranted) did not already give back; 0 for none.
func (b *buildAllowance) extend(pid int, loadGranted time.Duration) time.Duration {
	b.sample(pid)
	more := min(b.g.Lost-loadGranted-b.g.Granted, b.limit-b.g.Granted)
	if more < minExtension {
		return 0
	}
	b.g.Granted += more
	return more
}

// loadTimeout says whether a job killed now ran out of time because of the
// host: it was building and its build lost more than both grants gave back.
func (b *buildAllowance) loadTimeout(loadGranted time.Duration) bool {
	return b.in && b.g.Lost > loadGranted+b.g.Granted+minExtension
}

package worker

// A job's deadline is the candidate's time, not the machine's load: on a
// host with more runnable processes than cores, a child waits for a CPU
// for much of its wall time (a 256x256 relu's evaluation took 56 s on a
// 2-core machine at load 26, and `--timeout 10` turned it into a timeout).
// The kernel counts that wait per thread (/proc/PID/schedstat, the second
// field: time runnable but not running), so when the deadline fires the
// job gets the wait its processes accumulated since the last extension,
// up to MaxLoadGrant: a tenth of the deadline, less a reserve for the kill
// and the answer, so the answer comes within 1.1 times the deadline (it
// was ten times, and a 600 s job answered after 843 s: issue 36). A hang
// (sleeping, blocked, or spinning on an idle host) waits for no CPU and is
// killed on time. A build's waits (its compilers come and go, and 16
// builds at once can lose minutes) have an allowance of their own beyond
// this tenth: build.go.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// minExtension: less than this is not worth another timer round.
const minExtension = 50 * time.Millisecond

// LoadGrantShare is the most a deadline is extended for the host's load,
// as a share of the deadline: the bound a caller is told up front.
const LoadGrantShare = 0.1

// killReserve bounds the time kept out of the grant for what follows a
// kill (the exit event, reading the job's files, the result): the grant
// and all that fit in the share together.
const killReserve = 2 * time.Second

// MaxLoadGrant is the most a job with this deadline is granted for the
// host's load: LoadGrantShare of it, less the kill's reserve (at most
// half of that share).
func MaxLoadGrant(timeout time.Duration) time.Duration {
	share := time.Duration(LoadGrantShare * float64(timeout))
	return share - min(killReserve, share/2)
}

// loadAllowance tracks what a job's deadline was extended by.
type loadAllowance struct {
	base    time.Duration // the tree's wait when the job started (a kept child served earlier jobs)
	granted time.Duration // extensions so far
	limit   time.Duration // at most this in all
}

// start notes the child's wait so far, before this job.
func (a *loadAllowance) start(pid int) { a.base = treeRunqueueWait(pid) }

// extend returns how much longer the job may run: its process tree's
// run-queue wait not yet granted, within the limit; 0 to kill it now.
func (a *loadAllowance) extend(pid int) time.Duration {
	if pid <= 0 || a.granted >= a.limit {
		return 0
	}
	more := min(treeRunqueueWait(pid)-a.base-a.granted, a.limit-a.granted)
	if more < minExtension {
		return 0
	}
	a.granted += more
	return more
}

// treeRunqueueWait sums the run-queue wait of the main threads of pid and
// its live descendants (a compiler the child waits for counts too).
func treeRunqueueWait(pid int) time.Duration {
	var total time.Duration
	for _, p := range treePIDs(pid) {
		total += runqueueWait(p)
	}
	return total
}

// runqueueWait reads a process's main-thread run-queue wait; 0 when the
// kernel has no schedstat (CONFIG_SCHED_INFO off) or the process is gone.
func runqueueWait(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	ns, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}

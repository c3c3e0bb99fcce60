package worker

// Host memory of a running job (Job.RSSLimit). GPU jobs cannot have an
// address-space limit (the CUDA driver reserves terabytes of virtual space),
// and without any limit a candidate that fills host memory runs until the
// kernel's OOM killer picks a victim, minutes later on a large host and
// perhaps not the child. Anonymous resident memory is what runs out, so it
// is what the parent watches, for the child and every process it started.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// rssPoll is how often a job's memory is read: a process that fills memory
// at 10 GB/s overshoots its limit by at most a few GB.
const rssPoll = 200 * time.Millisecond

// maxTreeProcs bounds the walk of a job's process tree (a fork bomb must
// not make the parent's check slow).
const maxTreeProcs = 1024

var pageSize = int64(os.Getpagesize())

// treeRSS returns the anonymous resident bytes of pid and its descendants,
// found through /proc/PID/task/TID/children (pid alone on a kernel without
// that file). Shared and file-backed pages (the mapped CUDA and torch
// libraries, about a GB) are not counted: no single job owns them.
func treeRSS(pid int) int64 {
	var total int64
	for _, p := range treePIDs(pid) {
		total += anonResident(p)
	}
	return total
}

// treePIDs lists pid and its live descendants (at most maxTreeProcs).
func treePIDs(pid int) []int {
	var out []int
	seen := map[int]bool{}
	stack := []int{pid}
	for len(stack) > 0 && len(seen) < maxTreeProcs {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					stack = append(stack, c)
				}
			}
		}
	}
	return out
}

// anonResident is resident minus shared pages (statm's second and third
// fields): the process's anonymous memory, 0 once it is gone.
func anonResident(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	res, err1 := strconv.ParseInt(f[1], 10, 64)
	shared, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || res < shared {
		return 0
	}
	return (res - shared) * pageSize
}

// treeAnonPSS is the tree's anonymous memory with each page shared
// between processes counted once (Pss_Anon of /proc/PID/smaps_rollup,
// split among its sharers), or fallback where the kernel gives none.
// treeRSS counts an anonymous page once per process that maps it: the
// evaluation's judge and its PID namespace's init are forked from the
// child after torch's import, so its ~0.4 GB of anonymous memory read
// three times and an honest job under a 1 GiB limit was killed before its
// first stage. Reading smaps_rollup walks the page tables (milliseconds
// for a large process), so it only confirms a treeRSS over the limit.
func treeAnonPSS(pid int, fallback int64) int64 {
	var total int64
	for _, p := range treePIDs(pid) {
		kb, ok := pssAnonKB(p)
		if !ok {
			return fallback
		}
		total += kb << 10
	}
	return total
}

// pssAnonKB reads Pss_Anon (kB) of a process; false where absent (a
// kernel before 5.x, or the process gone).
func pssAnonKB(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss_Anon:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

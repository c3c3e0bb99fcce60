package worker

// Finding and killing a process's whole tree. The warm parent and each
// job's child are subreapers (worker.py), so what a job starts, setsid and
// double-forked daemons included, stays below them until it is killed here
// or swept by the parent.

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// parents maps every process on the host to its parent, read from
// /proc/PID/stat (complete, unlike the children files, which need
// CONFIG_PROC_CHILDREN).
func parents() map[int]int {
	out := map[int]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		out[pid] = parentOf(pid)
	}
	return out
}

// descendants returns every process below pid.
func descendants(pid int) []int {
	kids := map[int][]int{}
	for p, pp := range parents() {
		kids[pp] = append(kids[pp], p)
	}
	var out []int
	stack := []int{pid}
	seen := map[int]bool{pid: true}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range kids[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				stack = append(stack, c)
			}
		}
	}
	return out
}

// killTree kills pid's descendants, its process group and pid itself. The
// tree is walked a few times: a process may fork while it is walked.
func killTree(pid int) {
	if pid <= 0 {
		return
	}
	for range 3 {
		ds := descendants(pid)
		for _, d := range ds {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		if len(ds) == 0 {
			break
		}
	}
	killGroup(pid)
}

// jailInits returns those of pids that are the init of a PID namespace
// made by parent: the reaper a job's child starts for its jail
// (worker/py/sandbox/jail.py), which a kept child keeps. A candidate cannot make
// one: a new PID namespace needs privileges its sandbox took away.
func jailInits(parent int, pids []int) []int {
	var out []int
	for _, p := range pids {
		if nsInit(p) && parentOf(p) == parent {
			out = append(out, p)
		}
	}
	return out
}

// nsInit says whether pid is pid 1 of a PID namespace below the host's
// (its NSpid line in /proc/PID/status ends in 1).
func nsInit(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
}

// parentOf is pid's parent from /proc/PID/stat (complete, unlike the
// children files, which need CONFIG_PROC_CHILDREN); 0 if it is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(string(f[1]))
	return pp
}

package worker

// Finding and killing a process's whole tree. The warm parent and each
// job's child are subreapers (worker.py), so what a job starts, setsid and
// double-forked daemons included, stays below them until it is killed here
// or swept by the parent.

import (
	"bytes"
	"os"
	"strconv"
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
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: fields start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(string(f[1])); err == nil {
			out[pid] = pp
		}
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

package toolchaintest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessesWithArg lists the live processes on the host one of whose
// command-line arguments is arg. A candidate in the jail cannot name the
// host's pid of what it starts (its /proc is its own namespace's), so tests
// look for what it started by an argument only it used.
func ProcessesWithArg(arg string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !live(pid) {
			continue
		}
		for _, a := range bytes.Split(b, []byte{0}) {
			if string(a) == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// live says whether pid runs (a zombie does not).
func live(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	return len(f) > 0 && string(f[0]) != "Z"
}

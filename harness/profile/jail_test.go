package profile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A candidate under the profiler runs in its jail (sandbox/profiled.py):
// its writes outside its own folder fail, into a folder any uid may write
// and beside the harness's caches alike, and the process it leaves
// (setsid, double fork) does not outlive the profile, held by a PID
// namespace or, as under Nsight Compute, by a cgroup. The CPU profiles
// run everywhere; Nsight Compute where KEVOLVE_GPU=1. Under Nsight Compute
// (--target-processes all) a process the candidate forks in its module
// body never finishes (on the H200 its os.wait() waited out every
// deadline): there the profile may fail at the jail's deadline, but what
// the candidate left must still be gone and its writes refused.

func TestProfileJailHoldsTheCandidate(t *testing.T) {
	py := python(t)
	if os.Geteuid() != 0 {
		t.Skip("the jail's view, PID namespace and uid drop need root (CI and the GPU hosts run as root)")
	}
	pydir := harnessPyDir(t)
	cases := []struct {
		name, backend  string
		byCgroup, fork bool
		timeout        time.Duration
	}{
		{"cpu_pidns", "cpu", false, true, 3 * time.Minute},
		{"cpu_cgroup", "cpu", true, true, 3 * time.Minute},
		{"ncu", "ncu", false, false, 3 * time.Minute},
		{"ncu_fork", "ncu", false, true, 40 * time.Second},
	}
	for _, c := range cases {
		backend := c.backend
		t.Run(c.name, func(t *testing.T) {
			if backend == "ncu" && os.Getenv("KEVOLVE_GPU") != "1" {
				t.Skip("needs KEVOLVE_GPU=1 (GPU box with ncu)")
			}
			marks, cache := openFolder(t), openFolder(t)
			if err := os.Mkdir(filepath.Join(cache, "pch"), 0o777); err != nil {
				t.Fatal(err)
			}
			fork := map[bool]string{true: "1", false: "0"}[c.fork]
			opt := Options{Python: py, PyDir: pydir, CacheDir: cache, Backend: backend, Timeout: c.timeout,
				Env: map[string]string{"KEVOLVE_TEST_MARKS": marks, "KEVOLVE_TEST_FORK": fork}, jailByCgroup: c.byCgroup}
			rep, err := Profile(context.Background(), filepath.Join("testdata", "cpu", "ref_scale.py"),
				filepath.Join("testdata", "jail", "cand_escape.py"), opt)
			switch {
			case err != nil && c.name == "ncu_fork":
				t.Logf("profile failed, as a forking candidate under Nsight Compute may: %v", err)
			case err != nil:
				t.Fatal(err)
			case !rep.Available:
				t.Fatalf("no profile: %+v", rep)
			}
			for _, n := range rep.Notes {
				if strings.Contains(n, "jail") {
					t.Errorf("the jail was not whole: %s", n)
				}
			}
			for _, p := range []string{filepath.Join(marks, "planted"), filepath.Join(cache, "planted")} {
				if exists(p) {
					t.Errorf("the candidate wrote %s", p)
				}
			}
			if pids := processesNamed("kvjailescape"); len(pids) > 0 {
				t.Errorf("the candidate's process outlived the profile: pids %v", pids)
			}
		})
	}
}

// A candidate that hangs is killed at the jail's deadline, with what it
// left, before the run's own deadline kills the process group (which the
// process it left is not in): by its cgroup, under a profiler that injects
// itself or inside its PID namespace.
func TestProfileJailDeadlineKillsWhatTheCandidateLeft(t *testing.T) {
	py := python(t)
	if os.Geteuid() != 0 {
		t.Skip("the jail needs root (CI and the GPU hosts run as root)")
	}
	pydir := harnessPyDir(t)
	for _, byCgroup := range []bool{true, false} {
		t.Run(map[bool]string{true: "cgroup", false: "pidns"}[byCgroup], func(t *testing.T) {
			opt := Options{Python: py, PyDir: pydir, Backend: "cpu", Timeout: 20 * time.Second, jailByCgroup: byCgroup,
				Env: map[string]string{"KEVOLVE_TEST_MARKS": openFolder(t), "KEVOLVE_TEST_HANG": "1"}}
			_, err := Profile(context.Background(), filepath.Join("testdata", "cpu", "ref_scale.py"),
				filepath.Join("testdata", "jail", "cand_escape.py"), opt)
			if err == nil {
				t.Fatal("a candidate that never returned was profiled")
			}
			if pids := processesNamed("kvjailescape"); len(pids) > 0 {
				t.Errorf("the candidate's process outlived the profile's deadline: pids %v (error: %v)", pids, err)
			}
		})
	}
}

// openFolder is a temporary folder every uid may write: only the jail,
// not the folder's mode, keeps the candidate out.
func openFolder(t *testing.T) string {
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// processesNamed lists the pids whose command name is name.
func processesNamed(name string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(b)) == name {
			out = append(out, e.Name())
		}
	}
	return out
}

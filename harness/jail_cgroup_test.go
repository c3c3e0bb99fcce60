package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The jail's cgroup (issue 30, item 0; worker/py/sandbox/cgroup.py): a fork bomb
// stops at pids.max and fails its job, a job that fills its tmpfs /dev/shm
// and /tmp past its memory limit is killed there (out_of_memory) instead
// of passing, and after either nothing of the job is left: no process and
// no cgroup folder. Each hostile candidate has an honest twin that does
// the same within bounds and passes. A host whose cgroupfs the worker
// cannot write runs jobs as before and reports the layer missing.

// cgroupTestMem is the CPU jobs' memory limit here (address space beyond
// the child's start, and the cgroup's limit): room for an honest job and
// for the bomb's 4096 sleeps (about 0.8 GiB, charged to the cgroup), small
// enough that filling the tmpfs is quick.
const cgroupTestMem = 2 << 30

func TestJailCgroup(t *testing.T) {
	py := testPython(t)
	cache := t.TempDir()
	refPath := filepath.Join(t.TempDir(), "ref_relu.py")
	if err := os.WriteFile(refPath, []byte(readJail(t, "ref_relu.py")), 0o644); err != nil {
		t.Fatal(err)
	}
	probe, err := worker.ProbeSandbox(context.Background(), py, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(probe.Active, "cgroup") {
		// Never run a fork bomb without pids.max (the candidate refuses too).
		t.Skipf("no job cgroup on this host: %s", probe.Missing["cgroup"])
	}
	if !strings.Contains(probe.Detail["cgroup"], "pids.max") {
		t.Skipf("the job cgroup here has no pids.max (TestJailCgroupV2Core covers its core): %s", probe.Detail["cgroup"])
	}
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache, CPUMemLimit: cgroupTestMem,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	bomb := ownName("kvbomb")
	eval := func(t *testing.T, name string, subst ...string) *EvalResult {
		t.Helper()
		code := strings.NewReplacer(append(subst, "kvbomb", bomb)...).Replace(readJail(t, name))
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Path: refPath},
			Candidate: Source{Code: code}, Target: testTarget(), Timeout: 240 * time.Second, SkipTiming: true}, nil)
		if err != nil {
			t.Fatalf("%s: Evaluate: %v", name, err)
		}
		jobLeftNothing(t, res, bomb)
		return res
	}

	t.Run("fork_bomb", func(t *testing.T) {
		twin := eval(t, "fork_bomb.py", "__LIMIT__", "64")
		if twin.Verdict != VerdictPass || !strings.Contains(twin.Log, "BOMB started 64") {
			t.Fatalf("honest twin (64 processes): %s\n%s\n%s", twin.Verdict, twin.Log, dump(twin))
		}
		if _, failed := failedCheck(twin, "process_limit"); failed {
			t.Errorf("the honest twin hit the process limit:\n%s", dump(twin))
		}
		t0 := time.Now()
		res := eval(t, "fork_bomb.py", "__LIMIT__", "1000000")
		t.Logf("fork bomb: %s in %.1f s", res.Verdict, time.Since(t0).Seconds())
		n := bombStarted(res.Log)
		if n <= 0 || n >= 1000000 {
			t.Fatalf("the bomb did not run or was not stopped (started %d):\n%s", n, res.Log)
		}
		if res.Verdict == VerdictPass {
			t.Errorf("a fork bomb stopped at pids.max after %d processes passed\n%s", n, dump(res))
		}
		d, failed := failedCheck(res, "process_limit")
		if !failed || !strings.Contains(d, "pids.max") {
			t.Errorf("verdict %s without a failed process_limit check naming pids.max (%d processes started)\n%s", res.Verdict, n, dump(res))
		}
		t.Logf("%d processes started; checks failed: %s", n, failedNames(res))
		t.Logf("process_limit: %s", d)
		// The host is fine: the honest twin passes again.
		if again := eval(t, "fork_bomb.py", "__LIMIT__", "64"); again.Verdict != VerdictPass {
			t.Errorf("honest twin after the bomb: %s\n%s", again.Verdict, dump(again))
		}
	})

	t.Run("fills_shm", func(t *testing.T) {
		if gpuMode() {
			t.Skip("a GPU job has no memory limit to fill its tmpfs past")
		}
		twin := eval(t, "fills_shm.py", "__MIB__", "256")
		if twin.Verdict != VerdictPass || !strings.Contains(twin.Log, "FILLED 256 MiB") {
			t.Fatalf("honest twin (256 MiB in /dev/shm): %s\n%s\n%s", twin.Verdict, twin.Log, dump(twin))
		}
		res := eval(t, "fills_shm.py", "__MIB__", strconv.Itoa(1<<20))
		d, failed := failedCheck(res, "out_of_memory")
		if res.Verdict != VerdictRuntimeError || !failed || !strings.Contains(d, "cgroup") {
			t.Fatalf("verdict %s, want runtime_error with out_of_memory at the cgroup's limit\n%s\n%s", res.Verdict, res.Log, dump(res))
		}
		t.Logf("out_of_memory: %s", d)
	})

	// A crashed worker's cgroup (a process still in it) is removed by the
	// next worker when it starts.
	t.Run("stale", func(t *testing.T) {
		dir, sleeper := staleCgroup(t)
		ev2, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		defer ev2.Close()
		if _, err := ev2.WorkerInfo(context.Background()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- sleeper.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the process in the stale cgroup is still running")
			_ = sleeper.Process.Kill()
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("stale cgroup %s is still there", dir)
			_ = os.Remove(dir)
		}
	})
}

// TestJailCgroupMissing: where the worker cannot make cgroups (no cgroupfs
// where it looks, or a read-only one, as in a container) the layer is
// reported missing with the reason, every other layer is still there, and
// an honest job passes as before.
func TestJailCgroupMissing(t *testing.T) {
	py := testPython(t)
	cache := t.TempDir()
	base, err := worker.ProbeSandbox(context.Background(), py, cache)
	if err != nil {
		t.Fatal(err)
	}
	probeMissing := func(t *testing.T, want string) {
		t.Helper()
		probe, err := worker.ProbeSandbox(context.Background(), py, cache)
		if err != nil {
			t.Fatal(err)
		}
		why, missing := probe.Missing["cgroup"]
		if !missing || slices.Contains(probe.Active, "cgroup") || !strings.Contains(why, want) {
			t.Fatalf("cgroup layer: active %v, missing %q; want missing saying %q", probe.Active, why, want)
		}
		for name := range probe.Missing {
			if _, before := base.Missing[name]; !before && name != "cgroup" {
				t.Errorf("layer %s missing with the cgroup (%s); without KEVOLVE_CGROUP_ROOT: %v", name, probe.Missing[name], base.Missing)
			}
		}
	}
	t.Run("no_cgroupfs", func(t *testing.T) {
		t.Setenv("KEVOLVE_CGROUP_ROOT", filepath.Join(t.TempDir(), "nonexistent"))
		probeMissing(t, "no cgroup filesystem is mounted")
		ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		defer ev.Close()
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readJail(t, "ref_relu.py")},
			Candidate: Source{Code: readJail(t, "honest.py")}, Target: testTarget(), Timeout: 240 * time.Second, SkipTiming: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != VerdictPass || res.Sandbox == nil || res.Sandbox.Missing["cgroup"] == "" {
			t.Fatalf("honest job without a cgroup: %s, sandbox %+v\n%s", res.Verdict, res.Sandbox, dump(res))
		}
	})
	t.Run("read_only", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a cgroupfs needs root")
		}
		// A read-only mount of the pids hierarchy: what a container sees.
		root := t.TempDir()
		mp := filepath.Join(root, "pids")
		if err := os.Mkdir(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("cgroup", mp, "cgroup", syscall.MS_RDONLY, "pids"); err != nil {
			t.Skipf("mount a read-only pids cgroupfs: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(mp, syscall.MNT_DETACH) })
		t.Setenv("KEVOLVE_CGROUP_ROOT", root)
		probeMissing(t, "read-only")
	})
}

func failedNames(res *EvalResult) []string {
	var out []string
	for _, c := range res.Checks {
		if !c.Passed {
			out = append(out, c.Name)
		}
	}
	return out
}

func readJail(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jail", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bombStarted is how many processes fork_bomb.py says it started.
func bombStarted(log string) int {
	for _, line := range strings.Split(log, "\n") {
		if s, ok := strings.CutPrefix(line, "BOMB started "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(s))
			return n
		}
	}
	return -1
}

// jobLeftNothing fails unless, within seconds of the job's result, no
// process named name is alive and the job's cgroup (the candidate printed
// it: "CGROUP <path>") is gone from every hierarchy.
func jobLeftNothing(t *testing.T, res *EvalResult, name string) {
	t.Helper()
	var path string
	for _, line := range strings.Split(res.Log, "\n") {
		if p, ok := strings.CutPrefix(line, "CGROUP "); ok {
			path = strings.TrimSpace(p)
		}
	}
	leaf := filepath.Base(path)
	if !strings.HasPrefix(leaf, "kevolve.") {
		t.Errorf("the job ran outside a cgroup of its own: %q\n%s", path, res.Log)
		return
	}
	var dirs []string
	for c, own := range ownCgroups() {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, own, leaf))
	}
	left := func() []string {
		var out []string
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				out = append(out, d)
			}
		}
		return append(out, leftovers(name)...)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(left()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if l := left(); len(l) > 0 {
		t.Errorf("the job left cgroup folders or %s processes: %v", name, l)
	}
}

// ownCgroups is this process's v1 cgroup per controller the jail uses
// (the worker's, whose job cgroups are made below it), where mounted.
func ownCgroups() map[string]string {
	out := map[string]string{}
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if slices.Contains([]string{"pids", "memory", "freezer", "cpuacct"}, c) {
				if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
					out[c] = f[2]
				}
			}
		}
	}
	return out
}

// staleCgroup makes, in this process's pids cgroup, the folder a crashed
// worker of this PID namespace would have left (named by a pid that has
// ended), with a live process in it; returns the folder and the process.
func staleCgroup(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	own, ok := ownCgroups()["pids"]
	if !ok {
		t.Skip("no v1 pids hierarchy at /sys/fs/cgroup/pids")
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	ns = strings.Trim(ns, "pid:[]")
	gone := exec.Command("sleep", "30")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", gone.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(st)
	start := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])[19]
	_ = gone.Process.Kill()
	_ = gone.Wait()
	dir := filepath.Join("/sys/fs/cgroup/pids", own, fmt.Sprintf("kevolve.w%s.%d.%s.c1", ns, gone.Process.Pid, start))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		_ = os.Remove(dir)
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		_ = sleeper.Process.Kill()
		_ = os.Remove(dir)
		t.Fatal(err)
	}
	return dir, sleeper
}

// TestJailCgroupV2Core: where the worker's cgroup can hand no controllers
// on (the GPU hosts' containers here offer memory alone, and their jobs
// have no PID namespace), a job still gets a v2 cgroup of its own: its
// core (membership, freeze, kill, cpu.stat). Here a cgroup2 mount with no
// controllers (this host binds every one to v1) stands in for it: the
// probe reports the layer with what it lacks, a candidate whose relays
// leave its tree by clone(CLONE_PARENT) and setsid passes on its honest
// work, and neither a relay nor the job's cgroup is left after it.
func TestJailCgroupV2Core(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a cgroupfs needs root")
	}
	// Not under /tmp: the job's process makes its cgroup inside its view,
	// where /tmp is its own.
	root, err := os.MkdirTemp("/run", "kevolve-cg2-")
	if err != nil {
		t.Skipf("a folder for the mount outside /tmp: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(root) })
	if err := syscall.Mount("none", root, "cgroup2", 0, ""); err != nil {
		t.Skipf("mount a cgroup2 filesystem: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(root, syscall.MNT_DETACH) })
	if b, _ := os.ReadFile(filepath.Join(root, "cgroup.controllers")); strings.Contains(string(b), "pids") {
		t.Skip("this host's cgroup2 has a pids controller: TestJailCgroup covers it")
	}
	t.Setenv("KEVOLVE_CGROUP_ROOT", root)
	py, cache := testPython(t), t.TempDir()
	probe, err := worker.ProbeSandbox(context.Background(), py, cache)
	if err != nil {
		t.Fatal(err)
	}
	d := probe.Detail["cgroup"]
	if !slices.Contains(probe.Active, "cgroup") || !strings.Contains(d, "cgroup v2") || !strings.Contains(d, "forks are not limited") {
		t.Fatalf("cgroup layer on a controller-less cgroup2: active %v, detail %q, missing %q", probe.Active, d, probe.Missing["cgroup"])
	}
	t.Logf("cgroup layer: %s", d)
	refPath := filepath.Join(t.TempDir(), "ref_relu.py")
	if err := os.WriteFile(refPath, []byte(readJail(t, "ref_relu.py")), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	relay := ownName("kvrelay")
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Path: refPath},
		Candidate: Source{Code: strings.ReplaceAll(readJail(t, "escape_relay.py"), "kvrelay", relay)}, Target: testTarget(), Timeout: 240 * time.Second, SkipTiming: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictPass || res.Sandbox == nil || !slices.Contains(res.Sandbox.Active, "cgroup") {
		t.Fatalf("escape_relay in a v2 core cgroup: %s, sandbox %+v\n%s", res.Verdict, res.Sandbox, dump(res))
	}
	deadline := time.Now().Add(15 * time.Second)
	jobs := func() []string {
		m, _ := filepath.Glob(filepath.Join(root, "*", "kevolve.*"))
		n, _ := filepath.Glob(filepath.Join(root, "kevolve.*"))
		return append(append(m, n...), leftovers(relay)...)
	}
	for len(jobs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := jobs(); len(left) > 0 {
		t.Errorf("the job left cgroups or relays: %v", left)
	}
}

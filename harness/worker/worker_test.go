package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

func testPython(t testing.TB) string {
	t.Helper()
	p, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	return p
}

// newWorker starts a worker whose parent skips the slow dynamo import:
// these tests are about processes, not torch.
func newWorker(t testing.TB) *Worker {
	t.Helper()
	w, err := New(Config{Python: testPython(t), CacheDir: t.TempDir(),
		Env:    map[string]string{"KEVOLVE_WORKER_NO_DYNAMO": "1"},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie still answers kill 0; it is dead for our purposes.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func TestWorkerJobs(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	info, err := w.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parent ready: %v", info)
	parentPid := int(info["pid"].(float64))

	cases := []struct {
		name    string
		job     Job
		check   func(t *testing.T, o *Outcome)
		timeout bool
	}{
		{name: "echo", job: Job{Module: "selftest", Func: "echo", Args: map[string]any{"k": 1}}, check: func(t *testing.T, o *Outcome) {
			var r struct {
				Args   map[string]int `json:"args"`
				Pid    int            `json:"pid"`
				PPid   int            `json:"ppid"`
				Pgid   int            `json:"pgid"`
				Jailed bool           `json:"jailed"`
			}
			if err := json.Unmarshal(o.Result, &r); err != nil {
				t.Fatalf("result %s: %v", o.Result, err)
			}
			// The job runs in the child Go knows, or (in the jail) in that
			// child's only child, pid 1 of its own PID namespace; either way
			// in the group Go kills.
			runner := r.Pid
			if r.Jailed {
				runner = r.PPid
			}
			if r.Args["k"] != 1 || runner != o.Pid || r.Pgid != o.Pid || r.Pid == parentPid {
				t.Errorf("child identity wrong: %+v outcome pid %d parent %d", r, o.Pid, parentPid)
			}
			if jailed := os.Geteuid() == 0 && os.Getenv("KEVOLVE_SANDBOX") != "0"; r.Jailed != jailed {
				t.Errorf("jailed %v, want %v as root with the sandbox on", r.Jailed, jailed)
			}
			if !strings.Contains(o.Log, "hello from the child on stdout") || !strings.Contains(o.Log, "and on stderr") {
				t.Errorf("log lacks the child's prints: %q", o.Log)
			}
			if o.Stage != "echo" || o.Code != 0 {
				t.Errorf("stage %q code %d", o.Stage, o.Code)
			}
		}},
		{name: "exception", job: Job{Module: "selftest", Func: "raise_error"}, check: func(t *testing.T, o *Outcome) {
			if !strings.Contains(string(o.Result), "job failed on purpose") {
				t.Errorf("result %s", o.Result)
			}
		}},
		{name: "segfault", job: Job{Module: "selftest", Func: "segfault"}, check: func(t *testing.T, o *Outcome) {
			if o.Signal != syscall.SIGSEGV || o.Result != nil {
				t.Errorf("signal %v result %s", o.Signal, o.Result)
			}
		}},
		{name: "timeout", job: Job{Module: "selftest", Func: "sleep", Timeout: time.Second}, timeout: true, check: func(t *testing.T, o *Outcome) {
			if o.Signal != syscall.SIGKILL || o.Wall > 4*time.Second+o.LoadGrant {
				t.Errorf("signal %v wall %s", o.Signal, o.Wall)
			}
		}},
		{name: "memory_limit", job: Job{Module: "selftest", Func: "allocate", Args: map[string]any{"bytes": 2 << 30}, MemLimit: 256 << 20}, check: func(t *testing.T, o *Outcome) {
			if !strings.Contains(string(o.Result), "MemoryError") {
				t.Errorf("2 GiB under a 256 MiB limit: %s (signal %v)", o.Result, o.Signal)
			}
		}},
		{name: "unreported_result", job: Job{Module: "selftest", Func: "forge_then_exit"}, check: func(t *testing.T, o *Outcome) {
			if o.Result != nil || !o.Unreported || o.Code != 0 {
				t.Errorf("a result file the job never reported was taken: result %s, unreported %v, code %d", o.Result, o.Unreported, o.Code)
			}
		}},
		// The forger's own file dup2'd over the harness's result fd: the
		// harness's result must not land there while the forged one stays.
		{name: "swapped_result_fd", job: Job{Module: "selftest", Func: "swap_result_fd"}, check: func(t *testing.T, o *Outcome) {
			if o.Result != nil || !o.Unreported {
				t.Errorf("a forged result behind a swapped fd was taken: result %s, unreported %v, code %d", o.Result, o.Unreported, o.Code)
			}
		}},
		// A thread of the job's truncates the result file after the job
		// function wrote it: the empty file is not taken for a crash.
		{name: "emptied_result", job: Job{Module: "selftest", Func: "empty_after_done"}, check: func(t *testing.T, o *Outcome) {
			genuine := o.Result != nil && strings.Contains(string(o.Result), "genuine")
			if !genuine && (o.Result != nil || !o.Emptied || o.Code != 0) {
				t.Errorf("a result truncated after it was written: result %s, emptied %v, code %d", o.Result, o.Emptied, o.Code)
			}
			if o.Emptied && o.Result != nil {
				t.Errorf("emptied, yet a result was taken: %s", o.Result)
			}
			t.Logf("emptied %v, the genuine result read first %v", o.Emptied, genuine)
		}},
		{name: "big_result", job: Job{Module: "selftest", Func: "big", Args: map[string]any{"n": 1 << 20}}, check: func(t *testing.T, o *Outcome) {
			if len(o.Result) < 1<<20 {
				t.Errorf("result truncated: %d bytes", len(o.Result))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := w.Run(ctx, tc.job)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if o.TimedOut != tc.timeout {
				t.Fatalf("timed out = %v", o.TimedOut)
			}
			tc.check(t, o)
			// Run returns once the result is written; the exit follows.
			if !exitsWithin(o.Pid, 5*time.Second) {
				t.Errorf("child %d still alive 5 s after its job returned", o.Pid)
			}
		})
	}
	// The parent survived all of it.
	info2, err := w.Info(ctx)
	if err != nil || int(info2["pid"].(float64)) != parentPid {
		t.Fatalf("parent changed: %v %v", info2, err)
	}
}

// A timeout kills the child's whole process group, grandchildren included.
func TestWorkerKillsGroup(t *testing.T) {
	w := newWorker(t)
	dir := t.TempDir()
	tag := fmt.Sprintf("3600.%d", time.Now().UnixNano()%1e9) // the grandchild's sleep, found by it
	o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "spawn_and_sleep", Args: map[string]any{"dir": dir, "tag": tag},
		Timeout: 2 * time.Second, Writable: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if !o.TimedOut {
		t.Fatal("no timeout")
	}
	if _, err := os.Stat(filepath.Join(dir, "grandchild.started")); err != nil {
		t.Fatalf("the grandchild never started: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(toolchaintest.ProcessesWithArg(tag)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := toolchaintest.ProcessesWithArg(tag); len(left) > 0 {
		t.Fatalf("grandchild %v survived the timeout", left)
	}
}

// The device gate: two gated jobs with a semaphore of one never overlap,
// and the time spent waiting does not count against the deadline.
func TestWorkerGate(t *testing.T) {
	w := newWorker(t)
	sem := make(chan struct{}, 1)
	var mu sync.Mutex
	holders, maxHolders := 0, 0
	gate := func(ctx context.Context) (func(), error) {
		sem <- struct{}{}
		mu.Lock()
		holders++
		if holders > maxHolders {
			maxHolders = holders
		}
		mu.Unlock()
		time.Sleep(1500 * time.Millisecond) // hold the device a while
		return func() {
			mu.Lock()
			holders--
			mu.Unlock()
			<-sem
		}, nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "gated", Gate: gate, Timeout: 2 * time.Second})
			if err == nil && (o.TimedOut || o.Result == nil) {
				err = &os.PathError{Op: "gated job", Path: string(o.Result), Err: syscall.ETIMEDOUT}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if maxHolders != 1 {
		t.Fatalf("gate held by %d jobs at once", maxHolders)
	}
}

// A parent that dies is restarted on the next job; Close kills children.
func TestWorkerRestartAndClose(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	info, err := w.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := int(info["pid"].(float64))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	o, err := w.Run(ctx, Job{Module: "selftest", Func: "echo"})
	if err != nil || o.Result == nil {
		t.Fatalf("after the parent died: %v %+v", err, o)
	}
	info2, _ := w.Info(ctx)
	if int(info2["pid"].(float64)) == pid {
		t.Fatal("parent not restarted")
	}

	done := make(chan error, 1)
	go func() {
		_, err := w.Run(ctx, Job{Module: "selftest", Func: "sleep", Timeout: time.Minute})
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a job in flight at Close returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("job in flight did not end at Close")
	}
	if _, err := w.Run(ctx, Job{Module: "selftest", Func: "echo"}); err == nil {
		t.Fatal("Run after Close succeeded")
	}
	if alive(int(info2["pid"].(float64))) {
		t.Fatal("parent alive after Close")
	}
}

// A job handed 50 MB of arguments gets all of them, and a small job sent
// while they are on their way is not held up (it waited 9 s before the
// arguments moved to a file the child reads; BenchmarkBigSource has figures).
func TestWorkerBigArgs(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	code := strings.Repeat("y = 2  # a big candidate, with \"quotes\" and \\ escapes\n", 50<<20/52)
	big := make(chan error, 1)
	go func() {
		o, err := w.Run(ctx, Job{Module: "selftest", Func: "source_len", Args: map[string]any{"code": code}, Timeout: time.Minute})
		if err == nil {
			var r struct{ Len int }
			if err = json.Unmarshal(o.Result, &r); err == nil && r.Len != len(code) {
				err = fmt.Errorf("the child got %d bytes of %d: %s", r.Len, len(code), o.Log)
			}
		}
		big <- err
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	o, err := w.Run(ctx, Job{Module: "selftest", Func: "echo", Args: map[string]any{"k": 1}, Timeout: time.Minute})
	if err != nil || o.Result == nil {
		t.Fatalf("small job: %v %+v", err, o)
	}
	if wall := time.Since(t0); wall > 5*time.Second {
		t.Errorf("a small job took %s beside a 50 MB one", wall)
	}
	if err := <-big; err != nil {
		t.Fatal(err)
	}
}

// A job hands the device back ("ungate") before it returns, and a child that
// reported its result but never exits is killed once exitGrace passes.
func TestWorkerHandsBackEarly(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	var released atomic.Int64
	gate := func(ctx context.Context) (func(), error) {
		return func() { released.Store(time.Now().UnixNano()) }, nil
	}
	o, err := w.Run(ctx, Job{Module: "selftest", Func: "ungated", Args: map[string]any{"s": 1.5}, Gate: gate, Timeout: time.Minute})
	returned := time.Now()
	if err != nil || o.Result == nil {
		t.Fatalf("ungated job: %v %+v", err, o)
	}
	if released.Load() == 0 {
		t.Fatal("the device was never released")
	}
	if early := returned.Sub(time.Unix(0, released.Load())); early < 700*time.Millisecond {
		t.Fatalf("device released %v before the job returned, want it released when the child said ungate (1.5 s before)", early)
	}

	defer func(g time.Duration) { exitGrace = g }(exitGrace)
	exitGrace = 500 * time.Millisecond
	t0 := time.Now()
	o, err = w.Run(ctx, Job{Module: "selftest", Func: "done_then_hang", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("Run waited %v for a child that reported done", d)
	}
	if o.Pid == 0 {
		t.Fatal("no pid for the job")
	}
	if !exitsWithin(o.Pid, 10*time.Second) {
		t.Fatalf("child %d reported done and hung, and is still alive 10 s later", o.Pid)
	}
}

// exitsWithin says whether pid is gone (or a zombie) within d.
func exitsWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Reuse: a clean job leaves its child idle for the next job with the same
// environment; an unclean one, another environment, or the idle timeout
// each get a fresh child.
func TestWorkerReuse(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	type res struct {
		Pid      int    `json:"pid"`
		JobIndex int    `json:"job_index"`
		Env      string `json:"env"`
	}
	run := func(clean bool, env string) (res, *Outcome) {
		t.Helper()
		o, err := w.Run(ctx, Job{Module: "selftest", Func: "reusable", Args: map[string]any{"clean": clean},
			Env: map[string]string{"KV_TEST_KEY": env}, Reuse: true, Timeout: time.Minute})
		if err != nil || o.Result == nil {
			t.Fatalf("reusable job: %v %+v", err, o)
		}
		var r res
		if err := json.Unmarshal(o.Result, &r); err != nil {
			t.Fatal(err)
		}
		// A kept child is in the pool before Run returns ("done" says idle).
		if clean && w.IdleChildren() == 0 {
			t.Fatalf("clean job in child %d returned with no idle child in the pool", r.Pid)
		}
		return r, o
	}
	a, oa := run(true, "x")
	b, ob := run(true, "x")
	c, oc := run(true, "x")
	if a.Pid != b.Pid || b.Pid != c.Pid || c.JobIndex != 3 || oa.Reused || !ob.Reused || !oc.Reused {
		t.Fatalf("three clean jobs: pids %d %d %d, job index %d, reused %v %v %v; want one child serving all",
			a.Pid, b.Pid, c.Pid, c.JobIndex, oa.Reused, ob.Reused, oc.Reused)
	}
	d, _ := run(true, "y")
	if d.Pid == a.Pid || d.Env != "y" {
		t.Fatalf("another environment ran in child %d (env %q), the first environment's was %d", d.Pid, d.Env, a.Pid)
	}
	e, _ := run(false, "x") // takes x's idle child and leaves it unclean
	if e.Pid != a.Pid {
		t.Fatalf("x's idle child %d was not reused (got %d)", a.Pid, e.Pid)
	}
	if !exitsWithin(e.Pid, 5*time.Second) {
		t.Fatalf("child %d declared unclean but still alive", e.Pid)
	}
	f, of := run(true, "x")
	if f.Pid == e.Pid || of.Reused || f.JobIndex != 1 {
		t.Fatalf("after an unclean job: pid %d (was %d), reused %v, job index %d; want a fresh child", f.Pid, e.Pid, of.Reused, f.JobIndex)
	}

	defer func(d time.Duration) { IdleTTL = d }(IdleTTL)
	IdleTTL = 300 * time.Millisecond
	g, _ := run(true, "z")
	if !exitsWithin(g.Pid, 10*time.Second) {
		t.Fatalf("idle child %d outlived its idle timeout", g.Pid)
	}
	w.Close()
	for _, pid := range []int{a.Pid, d.Pid, f.Pid} {
		if !exitsWithin(pid, 5*time.Second) {
			t.Errorf("idle child %d alive after Close", pid)
		}
	}
}

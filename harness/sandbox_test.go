package harness

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Hostile candidates against the sandbox (issue 19): each is correct and
// does one hostile thing at import. Every one must pass, and leave no
// trace: no process, no secret in the result, no file outside its folders,
// a bounded log and a bounded server.

const (
	testToken  = "kevolve-token-must-not-leak-7f3a"
	testAPIKey = "sk-openai-key-must-not-leak-91c2"
)

func sandboxSource(t *testing.T, name string, subst ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sandbox", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(subst...).Replace(string(b))
}

// alive says whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// sandboxFixture is what the hostile cases share: one evaluator whose
// worker runs them all in turn, this host's sandbox layers, and the
// reference every candidate is checked against.
type sandboxFixture struct {
	ev      *Evaluator
	probe   sandbox.Report
	cache   string
	refDir  string
	refPath string
}

// has says whether this host's sandbox has a layer: a property whose layer
// is missing is not asserted (the result says it was missing).
func (f *sandboxFixture) has(layer string) bool { return slices.Contains(f.probe.Active, layer) }

// eval evaluates a candidate against the reference, without timing.
func (f *sandboxFixture) eval(t *testing.T, cand string, timeout time.Duration) *EvalResult {
	t.Helper()
	res, err := f.ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Path: f.refPath},
		Candidate: Source{Code: cand}, Target: testTarget(), Timeout: timeout, SkipTiming: true}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return res
}

// mustPassSandboxed fails unless the candidate passed inside a sandbox.
func mustPassSandboxed(t *testing.T, res *EvalResult) {
	t.Helper()
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass\n%s\nlog: %s", res.Verdict, dump(res), res.Log)
	}
	if res.Sandbox == nil || len(res.Sandbox.Active) == 0 {
		t.Fatalf("no sandbox report: %+v", res.Sandbox)
	}
}

// sandboxHostileCases are the hostile candidates, in the order they run
// (one worker serves them all, and a later case relies on an earlier one
// having left the judge intact).
func sandboxHostileCases() []struct {
	name string
	run  func(t *testing.T, f *sandboxFixture)
} {
	return []struct {
		name string
		run  func(t *testing.T, f *sandboxFixture)
	}{
		{"processes_outlive_nothing", sandboxProcesses},
		{"secrets_stay_out", sandboxSecrets},
		{"output_flood_bounded", sandboxFlood},
		{"writes_outside_refused", sandboxWritesOutside},
		{"ptrace_signal_network_refused", sandboxPtraceSignalNetwork},
	}
}

func TestSandboxHostileCandidates(t *testing.T) {
	py := testPython(t)
	// The server's secrets are in its environment before its worker starts.
	t.Setenv("KEVOLVE_TOKEN", testToken)
	t.Setenv("OPENAI_API_KEY", testAPIKey)
	t.Setenv("MY_SERVICE_PASSWORD", testToken+"-pw")
	f := &sandboxFixture{cache: t.TempDir(), refDir: t.TempDir()}
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: f.cache,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	f.ev = ev
	closed := false
	defer func() {
		if !closed {
			ev.Close()
		}
	}()
	// What this host's sandbox has: a candidate that would write outside
	// its folders is not run without Landlock.
	if f.probe, err = worker.ProbeSandbox(context.Background(), py, f.cache); err != nil {
		t.Fatal(err)
	}
	t.Logf("sandbox layers here: %v; missing: %v", f.probe.Active, f.probe.Missing)
	f.refPath = filepath.Join(f.refDir, "ref_relu.py")
	if err := os.WriteFile(f.refPath, []byte(sandboxSource(t, "ref_relu.py")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range sandboxHostileCases() {
		t.Run(c.name, func(t *testing.T) { c.run(t, f) })
	}
	// Close leaves nothing of the worker's tree.
	info, err := ev.w.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parent := int(info["pid"].(float64))
	ev.Close()
	closed = true
	if alive(parent) {
		t.Errorf("worker parent %d alive after Close", parent)
	}
}

// sandboxProcesses: the processes a candidate starts end with its
// evaluation, however it ends.
func sandboxProcesses(t *testing.T, f *sandboxFixture) {
	for _, tc := range []struct {
		end, want string
		timeout   time.Duration
	}{
		{"return", VerdictPass, 120 * time.Second},
		{"hang", VerdictTimeout, 25 * time.Second}, // the deadline ends it
		{"exit", VerdictCrash, 120 * time.Second},  // the parent sweeps the orphans
	} {
		tag := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
		res := f.eval(t, sandboxSource(t, "spawns.py", "__END__", tc.end, "__TAG__", tag), tc.timeout)
		if res.Verdict != tc.want {
			t.Fatalf("%s: verdict %s, want %s\n%s", tc.end, res.Verdict, tc.want, dump(res))
		}
		if !strings.Contains(res.Log, "SPAWNED") {
			t.Fatalf("%s: candidate did not report its 3 processes: %q", tc.end, res.Log)
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, arg := range []string{"3600.", "3601.", "3602."} {
			for len(toolchaintest.ProcessesWithArg(arg+tag)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if left := toolchaintest.ProcessesWithArg(arg + tag); len(left) > 0 {
				t.Errorf("%s: process %v (sleep %s) outlived its evaluation", tc.end, left, arg+tag)
			}
		}
	}
}

// sandboxSecrets: the server's secrets are not in the candidate's
// environment, nor anywhere in its result.
func sandboxSecrets(t *testing.T, f *sandboxFixture) {
	res := f.eval(t, sandboxSource(t, "prints_env.py"), 120*time.Second)
	mustPassSandboxed(t, res)
	if !strings.Contains(res.Log, "ENV ") {
		t.Fatalf("candidate printed no environment: %q", res.Log)
	}
	all := dump(res) + res.Log
	for _, s := range []string{testToken, testAPIKey, "KEVOLVE_TOKEN", "OPENAI_API_KEY", "MY_SERVICE_PASSWORD"} {
		if strings.Contains(all, s) {
			t.Errorf("%q reached the candidate:\n%s", s, res.Log)
		}
	}
}

// sandboxFlood: a 3 GiB flood of output is bounded on disk, in the result
// and in the server's memory.
func sandboxFlood(t *testing.T, f *sandboxFixture) {
	// Peak RSS from here on (the kernel resets VmHWM on "5").
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	stop := make(chan struct{})
	maxLog := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			select {
			case <-stop:
				maxLog <- peak
				return
			case <-time.After(50 * time.Millisecond):
			}
			logs, _ := filepath.Glob(filepath.Join(f.cache, "jobs", "*", "judge", "log.txt"))
			for _, l := range logs {
				var st syscall.Stat_t
				if syscall.Stat(l, &st) == nil {
					peak = max(peak, st.Blocks*512) // held on disk (the cap punches holes)
				}
			}
		}
	}()
	res := f.eval(t, sandboxSource(t, "floods.py"), 400*time.Second)
	close(stop)
	peakLog := <-maxLog
	mustPassSandboxed(t, res)
	hwm := vmHWM(t)
	t.Logf("3 GiB flood: log on disk peaked at %d MiB; result log %d bytes; test process peak RSS %d MiB; output_cap: %s",
		peakLog>>20, len(res.Log), hwm>>20, res.Sandbox.Detail["output_cap"])
	if len(res.Log) > 64<<10 || !strings.Contains(res.Log, "FLOOD-END") || !strings.Contains(res.Log, "left out") {
		t.Errorf("log not bounded to head and tail (%d bytes): %.300q ... %.300q", len(res.Log), res.Log, res.Log[max(len(res.Log)-300, 0):])
	}
	if hwm > 400<<20 {
		t.Errorf("server peak RSS %d MiB through the flood, want under 400", hwm>>20)
	}
	if peakLog > 1<<30 {
		t.Errorf("log reached %d MiB on disk", peakLog>>20)
	}
}

// sandboxWritesOutside: a candidate writes nowhere but its folders (home,
// a world-writable folder, the reference's, the worker's files, the
// cache), and the next evaluation still passes.
func sandboxWritesOutside(t *testing.T, f *sandboxFixture) {
	if !f.has("landlock") {
		t.Skipf("no Landlock on this host (%s): nothing keeps candidate writes in their folder", f.probe.Missing["landlock"])
	}
	home, _ := os.UserHomeDir()
	marker := filepath.Join(home, "kevolve-sandbox-was-here")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("%s exists before the test", marker)
	}
	defer os.Remove(marker)
	sentinelHome := filepath.Join(home, ".kevolve-sandbox-test-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(sentinelHome, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sentinelHome)
	if err := os.WriteFile(filepath.Join(sentinelHome, "keep.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared, err := os.MkdirTemp("", "kevolve-world-writable-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	pyDir := f.ev.w.PyDir()
	before := snapshotTree(t, f.refDir, pyDir, sentinelHome)
	deep := []string{sentinelHome, shared, f.refDir, f.cache}
	targets := append([]string{home}, deep...)
	res := f.eval(t, sandboxSource(t, "writes_outside.py", "__SHALLOW__", pyList([]string{home}), "__DEEP__", pyList(deep)), 120*time.Second)
	mustPassSandboxed(t, res)
	if !strings.Contains(res.Log, "REFUSED") {
		t.Fatalf("the candidate did not run its writes: %q", res.Log)
	}
	// Where this host reports the build_cache layer missing, the shared
	// build cache is writable to candidates (the result says so); every
	// other folder must hold.
	buildCache := filepath.Join(f.cache, "kernels") + string(filepath.Separator)
	for _, line := range strings.Split(res.Log, "\n") {
		verb, path, _ := strings.Cut(line, " ")
		if verb != "WROTE" && verb != "DELETED" && verb != "APPENDED" {
			continue
		}
		if !f.has("build_cache") && strings.HasPrefix(path, buildCache) {
			t.Logf("build_cache missing here: %s", line)
			continue
		}
		t.Errorf("the candidate %s outside its folders: %s", strings.ToLower(verb), line)
	}
	for _, d := range append(targets, pyDir) {
		if _, err := os.Stat(filepath.Join(d, "kevolve-sandbox-was-here")); err == nil {
			t.Errorf("a file appeared in %s", d)
		}
	}
	if after := snapshotTree(t, f.refDir, pyDir, sentinelHome); after != before {
		t.Errorf("files outside the job's folders changed:\nbefore %s\nafter  %s", before, after)
	}
	// The judge and the reference are intact: the next evaluation passes.
	mustPassSandboxed(t, f.eval(t, sandboxSource(t, "prints_env.py"), 120*time.Second))
}

// sandboxPtraceSignalNetwork: a candidate can neither trace nor signal
// another process, nor reach the server's port, where the host's layers
// refuse it.
func sandboxPtraceSignalNetwork(t *testing.T, f *sandboxFixture) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	res := f.eval(t, sandboxSource(t, "ptraces.py", "__PORT__", port), 120*time.Second)
	mustPassSandboxed(t, res)
	var want []string
	if f.has("seccomp") {
		want = append(want, "PTRACE -1 1", "VM_READV -1 1", "VM_WRITEV -1 1")
	}
	if f.has("landlock") {
		want = append(want, "PROC_MEM refused") // Landlock scopes ptrace access
		var abi int
		if fmt.Sscanf(f.probe.Detail["landlock"], "ABI %d", &abi); abi >= 6 {
			want = append(want, "SIGNAL refused") // ABI 6 scopes signals too
		}
	}
	if slices.Contains(res.Sandbox.Active, "netns") {
		want = append(want, "NET refused")
	}
	for _, w := range want {
		if !strings.Contains(res.Log, w) {
			t.Errorf("log lacks %q:\n%s", w, res.Log)
		}
	}
	ln.Close()
	if slices.Contains(res.Sandbox.Active, "netns") && <-accepted {
		t.Errorf("the candidate reached the server's port")
	}
}

// vmHWM is this process's peak resident memory.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// snapshotTree lists files with their sizes and times under dirs.
func snapshotTree(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		_ = filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				fmt.Fprintf(&b, "%s:%d:%d ", p, fi.Size(), fi.ModTime().UnixNano())
			}
			return nil
		})
	}
	return b.String()
}

func pyList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

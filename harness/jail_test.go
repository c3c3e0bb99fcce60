package harness

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The jail (issue 30): hostile candidates that leave the candidate's tree,
// rewrite the result after the judge looked, plant a build, forge the
// sandbox's report, fill the job's scratch space or run a thread from C.
// Each computes the honest ReLU of its twin (testdata/jail/honest.py),
// timed in the same run: whatever it does, it gets its right verdict and
// no more than its honest speed, and nothing of it survives its job.

// jailSpeedupSlack is how far a hostile candidate's speedup may stand above
// its honest twin's before it counts as a wrong number: loose enough for
// a loaded 2-core host (timings there move by tens of percent), far below
// what the attacks gave without the jail (24x to 749x the honest figure).
const jailSpeedupSlack = 3.0

// jailTwinFloor is the least speedup the honest twin is taken to have: its
// speed on an idle 2-core host is 0.5-0.8x.
const jailTwinFloor = 0.5

type jailFixture struct {
	ev      *Evaluator
	cache   string
	refPath string
	twin    float64 // the honest twin's speedup over eager
}

func (f *jailFixture) eval(t *testing.T, name string, subst ...string) *EvalResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "jail", name))
	if err != nil {
		t.Fatal(err)
	}
	code := strings.NewReplacer(subst...).Replace(string(b))
	res, err := f.ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Path: f.refPath},
		Candidate: Source{Code: code}, Target: testTarget(), Timeout: 240 * time.Second, Trials: 2}, nil)
	if err != nil {
		t.Fatalf("%s: Evaluate: %v", name, err)
	}
	return res
}

// honestSpeed fails unless a passing hostile result's speedup is within
// the slack of the twin's (a result that is not a pass is judged by its case).
func (f *jailFixture) honestSpeed(t *testing.T, res *EvalResult) {
	t.Helper()
	if res.Verdict != VerdictPass || res.SpeedupVsEager == nil {
		return
	}
	s := *res.SpeedupVsEager
	// The twin is never taken as slower than its idle-machine speed
	// (about 0.5x): beside another test suite on 2 cores it read 0.04x,
	// twice, while the hostile candidate's noise-filtered median read 0.84x.
	f.twin = max(f.twin, jailTwinFloor)
	if s > jailSpeedupSlack*f.twin {
		// The twin timed once may have met a burst of load (CI's 2-core
		// host, load average 6: the twin read 0.09x, its usual 0.5-0.8x):
		// timed again, the best of its two readings stands.
		if again := f.eval(t, "honest.py"); again.Verdict == VerdictPass && again.SpeedupVsEager != nil {
			f.twin = max(f.twin, *again.SpeedupVsEager)
		}
	}
	if s > jailSpeedupSlack*f.twin {
		t.Errorf("pass at %.2fx over eager, the honest twin %.2fx: the number is not the kernel's\n%s", s, f.twin, dump(res))
	}
}

// ownName is name made this test process's own (name and its pid, within
// the 15 bytes of a comm): leftovers finds a job's processes by name, and
// a test run beside this one (make test beside make test) runs the same
// candidates, whose live processes are not this job's leftovers.
func ownName(name string) string {
	n := fmt.Sprintf("%s%d", name, os.Getpid())
	return n[:min(len(n), 15)]
}

// leftovers lists live processes named name (their comm).
func leftovers(name string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		pid, _ := strconv.Atoi(e.Name())
		if err == nil && strings.TrimSpace(string(b)) == name && alive(pid) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestJailHostileCandidates runs the table in the full jail (a CPU job's,
// and a GPU job's where CUDA memory crosses to the judge by descriptor)
// and in the shared-uid jail of a GPU job whose memory crosses by torch's
// IPC (KEVOLVE_JAIL=ipc: no PID namespace and the server's uid; the cgroup
// and the read-only host stand in for them), so a host without a GPU tests
// both. On a GPU host every job is a GPU job: it runs the jail that host's
// driver allows (doctor's probe says which).
func TestJailHostileCandidates(t *testing.T) {
	jails := []string{"cpu_job", "ipc_jail"}
	if gpuMode() {
		jails = []string{"gpu_job"}
	}
	for _, jail := range jails {
		t.Run(jail, func(t *testing.T) {
			if jail == "ipc_jail" {
				t.Setenv("KEVOLVE_JAIL", "ipc") // the worker reads it when it starts
			}
			jailTable(t, jail == "ipc_jail")
		})
	}
}

func jailTable(t *testing.T, ipcJail bool) {
	py := testPython(t)
	f := &jailFixture{cache: t.TempDir()}
	f.refPath = filepath.Join(t.TempDir(), "ref_relu.py")
	b, err := os.ReadFile(filepath.Join("testdata", "jail", "ref_relu.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.refPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f.ev, err = NewEvaluator(EvalConfig{Python: py, CacheDir: f.cache,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.ev.Close()
	probe, err := worker.ProbeSandbox(context.Background(), py, f.cache)
	if err != nil {
		t.Fatal(err)
	}
	if gpuMode() {
		ipcJail = probe.Replaced["uid"] != "" // the probe names the GPU jobs' jail
		t.Logf("GPU jobs' jail here: shared uid %v", ipcJail)
	}
	if os.Geteuid() == 0 {
		// Every host this project runs on runs it as root: there, no layer
		// of the jail may be missing.
		missing := maps.Clone(probe.Missing)
		if why, ok := missing["cgroup"]; ok {
			// The host's to give (a container's read-only cgroupfs, a v2
			// tree whose cgroup holds processes): the other layers still
			// hold every case here; TestJailCgroup tests it where it exists.
			t.Logf("cgroup layer missing on this host: %s", why)
			delete(missing, "cgroup")
		}
		for name, why := range missing {
			if instead := probe.Replaced[name]; instead != "" {
				// A GPU job's gaps where its memory crosses by torch's
				// IPC, each with the layer that stands in for it.
				t.Logf("GPU job without %s (%s); instead: %s", name, why, instead)
				delete(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("sandbox layers missing on this host: %v", missing)
		}
	}
	twin := f.eval(t, "honest.py")
	if twin.Verdict != VerdictPass || twin.SpeedupVsEager == nil {
		t.Fatalf("honest twin: %s\n%s", twin.Verdict, dump(twin))
	}
	f.twin = *twin.SpeedupVsEager
	t.Logf("honest twin: %.2fx over eager (candidate %.3g s, reference %.3g s)", f.twin, twin.Candidate.MedianS, twin.RefEager.MedianS)
	if os.Geteuid() == 0 {
		jailLayers(t, twin, ipcJail)
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f *jailFixture)
	}{
		{"escape_relay", jailEscapeRelay},
		{"forges_result", jailForgesResult},
		{"plants_cache", jailPlantsCache},
		{"forges_report", jailForgesReport},
		{"fills_scratch", jailFillsScratch},
		{"native_thread", jailNativeThread},
		{"plants_spin_cubin", jailPlantsSpinCubin},
		{"ipc_clobber", jailIPCClobber},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, f) })
	}
}

// needsGPU skips a case that only a CUDA device can run.
func needsGPU(t *testing.T) {
	t.Helper()
	if !gpuMode() {
		t.Skip("a GPU case (KEVOLVE_GPU=1)")
	}
}

// jailPlantsSpinCubin: a file planted under the cache names of the timer's
// spin kernel reaches neither the shared cache nor either timer (the
// in-process one and the judge's): the timing keeps its device-filling
// spin, and the speed is the honest twin's.
func jailPlantsSpinCubin(t *testing.T, f *jailFixture) {
	needsGPU(t)
	shared := filepath.Join(f.cache, "kernels")
	res := f.eval(t, "plants_spin_cubin.py", "__SHARED__", shared)
	if !strings.Contains(res.Log, "PLANT spin keys [") || strings.Contains(res.Log, "PLANT spin keys []") {
		t.Fatalf("the candidate named no key to plant under:\n%s", res.Log)
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass\n%s", res.Verdict, dump(res))
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "spin") {
			t.Errorf("the timer lost its spin kernel: %s", w)
		}
	}
	_ = filepath.WalkDir(shared, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(d.Name(), ".cubin") {
			if b, _ := os.ReadFile(p); strings.HasPrefix(string(b), "planted") {
				t.Errorf("a candidate planted %s in the shared cache", p)
			}
		}
		return nil
	})
	f.honestSpeed(t, res)
	again := f.eval(t, "honest.py")
	if again.Verdict != VerdictPass {
		t.Errorf("honest twin after the plant: %s\n%s", again.Verdict, dump(again))
	}
}

// jailIPCClobber: what the judge shares with the candidate's process (by
// descriptor, or torch's CUDA IPC) is an allocation that holds nothing else
// of the judge's: a candidate that searches it for the
// reference's output finds none, and zeroing it changes no verdict.
func jailIPCClobber(t *testing.T, f *jailFixture) {
	needsGPU(t)
	res := f.eval(t, "ipc_clobber.py")
	if !strings.Contains(res.Log, "IPC mapped") {
		t.Fatalf("the judge's calls never reached the candidate:\n%s\n%s", res.Log, dump(res))
	}
	if strings.Contains(res.Log, "IPC LEAK") {
		t.Errorf("the judge's reference output was in reach of the candidate's process:\n%s", res.Log)
	}
	if res.Verdict != VerdictIncorrect && res.Verdict != VerdictIntegrityViolation {
		t.Errorf("verdict %s for zeros in the judge's trials, want incorrect\n%s", res.Verdict, dump(res))
	}
}

// jailLayers: a job's report names the jail it got. A job in the
// shared-uid jail runs without the PID namespace and the uid drop, and
// never without what stands in for them: the view, the read-only host,
// Landlock. Every other job, GPU jobs included, has them.
func jailLayers(t *testing.T, res *EvalResult, ipcJail bool) {
	t.Helper()
	if res.Sandbox == nil {
		t.Fatalf("no sandbox report:\n%s", dump(res))
	}
	active := strings.Join(res.Sandbox.Active, ",") + ","
	for _, name := range []string{"view", "read_only", "build_cache", "capabilities", "no_new_privs", "seccomp"} {
		if !strings.Contains(active, name+",") {
			t.Errorf("layer %s not active in the job: %+v", name, res.Sandbox)
		}
	}
	for _, name := range []string{"pidns", "uid"} {
		if got := strings.Contains(active, name+","); got == ipcJail {
			t.Errorf("layer %s active=%v in a job whose jail is shared-uid=%v: %+v", name, got, ipcJail, res.Sandbox)
		}
		// What stands in for it: the cgroup, where the host makes one,
		// for the PID namespace; the read-only host for the uid.
		if instead := res.Sandbox.Replaced[name]; ipcJail && instead == "" && (name == "uid" || strings.Contains(active, "cgroup,")) {
			t.Errorf("a shared-uid job without %s names nothing that stands in for it: %+v", name, res.Sandbox)
		}
	}
}

// jailEscapeRelay: processes that left the tree through clone(CLONE_PARENT)
// and setsid neither slow the judge's reference timing nor outlive the job.
func jailEscapeRelay(t *testing.T, f *jailFixture) {
	relay := ownName("kvrelay")
	res := f.eval(t, "escape_relay.py", "kvrelay", relay)
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass (the candidate's own work is honest)\n%s", res.Verdict, dump(res))
	}
	f.honestSpeed(t, res)
	deadline := time.Now().Add(10 * time.Second)
	for len(leftovers(relay)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := leftovers(relay); len(left) > 0 {
		t.Errorf("relay processes outlived the job: %v", left)
	}
}

// jailForgesResult: a result rewritten after the judge looked (in memory
// or through the result file) is refused or has no effect.
func jailForgesResult(t *testing.T, f *jailFixture) {
	res := f.eval(t, "forges_result.py")
	if !strings.Contains(res.Log, "FORGING") {
		t.Fatalf("the candidate never ran in the judge's stage: %s\n%s", res.Verdict, res.Log)
	}
	switch res.Verdict {
	case VerdictPass:
		f.honestSpeed(t, res)
	case VerdictIntegrityViolation:
		if _, failed := failedCheck(res, "result_forged"); !failed {
			t.Errorf("integrity_violation without result_forged:\n%s", dump(res))
		}
	default:
		t.Errorf("verdict %s, want result_forged or an honest pass\n%s", res.Verdict, dump(res))
	}
	// Its process is not kept: the next evaluation is honest again.
	again := f.eval(t, "honest.py")
	if again.Verdict != VerdictPass {
		t.Errorf("honest twin after the forgery: %s\n%s", again.Verdict, dump(again))
	}
	f.honestSpeed(t, again)
}

// jailPlantsCache: nothing a candidate writes reaches a cache another
// evaluation loads from.
func jailPlantsCache(t *testing.T, f *jailFixture) {
	shared := filepath.Join(f.cache, "kernels")
	res := f.eval(t, "plants_cache.py", "__SHARED__", shared)
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass\n%s", res.Verdict, dump(res))
	}
	if !strings.Contains(res.Log, "PLANT") {
		t.Fatalf("the candidate tried nothing: %s", res.Log)
	}
	_ = filepath.WalkDir(shared, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "kv_planted.so" {
			t.Errorf("a candidate planted %s in the shared cache", p)
		}
		return nil
	})
	// What it could write landed in its own job: its folder, or its
	// private /tmp, which the host never sees.
	for _, line := range strings.Split(res.Log, "\n") {
		path, ok := strings.CutPrefix(line, "PLANT written ")
		if !ok || strings.Contains(path, "/work/") {
			continue
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("a candidate's plant is on the host: %s", path)
		}
	}
}

// jailForgesReport: the sandbox's report and the judge's files are not
// the candidate's to write. The result file and the status board it may
// scribble on through the descriptors its process writes them with: the
// result is written again, sealed, at the job's end (a later rewrite is
// result_forged: jailForgesResult), and the board only names stages.
func jailForgesReport(t *testing.T, f *jailFixture) {
	res := f.eval(t, "forges_report.py")
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass\n%s", res.Verdict, dump(res))
	}
	for _, name := range []string{"sandbox.json", "judge.json", "args.json"} {
		if strings.Contains(res.Log, "REPORT written "+name) {
			t.Errorf("the candidate wrote the harness's %s:\n%s", name, res.Log)
		}
	}
	f.honestSpeed(t, res)
	if res.Sandbox == nil || len(res.Sandbox.Active) < 5 || strings.Contains(strings.Join(res.Sandbox.Active, ","), "everything") {
		t.Errorf("sandbox report %+v", res.Sandbox)
	}
}

// jailFillsScratch: what a job leaves in /tmp and /dev/shm is gone with it
// (the host's are never touched).
func jailFillsScratch(t *testing.T, f *jailFixture) {
	tag := fmt.Sprint(time.Now().UnixNano())
	res := f.eval(t, "fills_scratch.py", "__TAG__", tag)
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass\n%s", res.Verdict, dump(res))
	}
	for _, d := range []string{"/dev/shm", "/tmp"} {
		if _, err := os.Stat(filepath.Join(d, "kvfill-"+tag)); err == nil {
			t.Errorf("%s/kvfill-%s survived the job", d, tag)
			os.Remove(filepath.Join(d, "kvfill-"+tag))
		}
	}
}

// jailNativeThread: a thread started from C, which Python's thread list
// never shows, runs through the reference's timing: the judge's timing
// (the jail stopped) stays honest.
func jailNativeThread(t *testing.T, f *jailFixture) {
	res := f.eval(t, "native_thread.py")
	if !strings.Contains(res.Log, "NATIVE thread 0") {
		t.Fatalf("no native thread started: %s\n%s", res.Verdict, res.Log)
	}
	switch res.Verdict {
	case VerdictPass:
		f.honestSpeed(t, res)
	case VerdictIntegrityViolation:
	default:
		t.Errorf("verdict %s, want pass at its honest speed or integrity_violation\n%s", res.Verdict, dump(res))
	}
}

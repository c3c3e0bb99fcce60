package harness

import (
	"context"
	"log/slog"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// Device state (issue 19 item 6, KEVOLVE_GPU=1): a candidate that changes
// the device's limits or the harness's stream attributes is an
// integrity_violation (device_state), and a kept child serves the next
// evaluation as a fresh one would.

func gpuEval(t *testing.T, ev *Evaluator, ref, cand string) *EvalResult {
	t.Helper()
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, ref)},
		Candidate: Source{Code: readTestdata(t, cand)}, Target: "nvidia", Device: "0", Timeout: 170 * time.Second,
		CompileReference: new(bool)}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Process != nil {
		t.Logf("%s: %s, job %d in its child, kept %v %s", cand, res.Verdict, res.Process.Job, res.Process.Kept, res.Process.Why)
	}
	return res
}

func TestDeviceStateGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	// The stack size alone is no verdict (the driver raises it for a
	// kernel with local arrays, evaluate.guards.devstate.GROWN_BY_DRIVER): the
	// heap size is what flags the second case.
	for _, tc := range []struct{ name, cand, want string }{
		{"persisting_l2_and_access_policy_window", "gpu_persisting_l2.py", "access_policy_window"},
		{"stack_and_heap_limits", "gpu_stack_heap_limit.py", "limit.malloc_heap_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpuEval(t, ev, "gpu_ref_scale.py", "gpu_kernel_honest.py") // a kept child for the hostile one
			res := gpuEval(t, ev, "gpu_ref_scale.py", tc.cand)
			d, ok := failedCheck(res, "device_state")
			if res.Verdict != VerdictIntegrityViolation || !ok {
				t.Fatalf("verdict %s, want integrity_violation through device_state\n%s", res.Verdict, dump(res))
			}
			t.Logf("device_state: %s", d)
			if !strings.Contains(d, tc.want) {
				t.Errorf("device_state detail %q does not name %s", d, tc.want)
			}
			if res.Process != nil && res.Process.Kept {
				t.Errorf("a child whose candidate changed the device state was kept")
			}
		})
	}
}

// A candidate that changes the device state after its own checks (its
// model's finalizer) leaves a child the harness restores or drops; the
// next honest evaluation, in a kept child, gets the speedup a fresh child
// gets, within noise. The same after the flagged persisting-L2 candidate.
func TestDeviceStateKeptChildGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	kept, err := NewEvaluator(EvalConfig{Python: testPython(t), CacheDir: t.TempDir(), Reuse: ReuseAll,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	fresh, err := NewEvaluator(EvalConfig{Python: testPython(t), CacheDir: t.TempDir(), Reuse: ReuseNever,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	speedup := func(res *EvalResult) float64 {
		t.Helper()
		if res.Verdict != VerdictPass || res.SpeedupVsEager == nil {
			t.Fatalf("honest evaluation: %s\n%s", res.Verdict, dump(res))
		}
		return *res.SpeedupVsEager
	}
	// Median of three fresh children: the speedup to match.
	var fs []float64
	for range 3 {
		fs = append(fs, speedup(gpuEval(t, fresh, "gpu_ref_scale.py", "gpu_kernel_honest.py")))
	}
	want := median3(fs)
	t.Logf("fresh children: %v, median %.3f", fs, want)
	for _, hostile := range []string{"gpu_persisting_l2_late.py", "gpu_persisting_l2.py"} {
		speedup(gpuEval(t, kept, "gpu_ref_scale.py", "gpu_kernel_honest.py")) // a child to keep
		h := gpuEval(t, kept, "gpu_ref_scale.py", hostile)
		t.Logf("%s: verdict %s, warnings %q", hostile, h.Verdict, h.Warnings)
		var got []float64
		reused := false
		for range 3 {
			r := gpuEval(t, kept, "gpu_ref_scale.py", "gpu_kernel_honest.py")
			got = append(got, speedup(r))
			reused = reused || (r.Process != nil && r.Process.Job > 1)
		}
		g := median3(got)
		t.Logf("after %s: %v, median %.3f (fresh %.3f)", hostile, got, g, want)
		if !reused {
			t.Errorf("no honest evaluation ran in a kept child after %s", hostile)
		}
		if math.Abs(g/want-1) > 0.1 {
			t.Errorf("after %s the kept child's honest speedup %.3f differs from a fresh child's %.3f by more than 10%%", hostile, g, want)
		}
	}
}

func median3(xs []float64) float64 {
	a, b, c := xs[0], xs[1], xs[2]
	return math.Max(math.Min(a, b), math.Min(math.Max(a, b), c))
}

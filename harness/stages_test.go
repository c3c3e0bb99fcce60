package harness

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The evaluation child's stage modules, unit by unit (chunked comparison,
// random-order snapshots, input refresh, op traces, the CPU timer's
// flush), and the check registry against the code that records checks,
// with the worker's unpacked py dir on sys.path.
func TestEvaluateStageModules(t *testing.T) {
	runPyStageTests(t, 240*time.Second, "CUDA_VISIBLE_DEVICES=", "test_stages", "test_registry", "test_fastcmp", "test_timing", "test_proctree", "test_wire", "test_partition", "test_starts", "test_hooks", "test_profiled", "test_baseline")
}

// CUDA tensors cross between the judge and a candidate's process jailed as
// a GPU job's is (a PID namespace of its own, uid 65534) by descriptor, both
// ways, and what a hostile sender puts in a message is refused
// (testdata/pystages/test_wire.py).
func TestWireAcrossJailOnGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 runs this on a CUDA device")
	}
	runPyStageTests(t, 180*time.Second, "KEVOLVE_WIRE_GPU=1", "test_wire")
}

// The comparison's one-pass kernel against the torch path it stands in
// for, on the GPU: the same verdicts and details, the same counts at the
// tolerance's edge (testdata/pystages/test_fastcmp.py).
func TestFastCompareMatchesTorchPathOnGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 runs this on a CUDA device")
	}
	runPyStageTests(t, 180*time.Second, "KEVOLVE_FASTCMP_GPU=1", "test_fastcmp")
}

// runPyStageTests runs unittest modules of testdata/pystages in the
// worker's Python, its unpacked py dir on sys.path, with env added.
func runPyStageTests(t *testing.T, timeout time.Duration, env string, modules ...string) {
	t.Helper()
	ev := evaluator(t)
	if _, err := ev.WorkerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dir, _ := filepath.Abs(filepath.Join("testdata", "pystages"))
	cmd := exec.CommandContext(ctx, testPython(t), append([]string{"-m", "unittest", "-v"}, modules...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "PYTHONPATH="+ev.PyDir(), env)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", modules, err, out)
	}
	t.Logf("%s", out)
}

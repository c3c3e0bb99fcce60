package harness

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The evaluation child's stage modules, unit by unit (chunked comparison,
// random-order snapshots, input refresh, op traces), and the check
// registry against the code that records checks, with the worker's
// unpacked py dir on sys.path.
func TestEvaluateStageModules(t *testing.T) {
	ev := evaluator(t)
	if _, err := ev.WorkerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dir, _ := filepath.Abs(filepath.Join("testdata", "pystages"))
	cmd := exec.CommandContext(ctx, testPython(t), "-m", "unittest", "-v", "test_stages", "test_registry", "test_fastcmp")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "PYTHONPATH="+ev.PyDir(), "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stage module tests: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// The comparison's one-pass kernel against the torch path it stands in
// for, on the GPU: the same verdicts and details, the same counts at the
// tolerance's edge (testdata/pystages/test_fastcmp.py).
func TestFastCompareMatchesTorchPathOnGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 runs this on a CUDA device")
	}
	ev := evaluator(t)
	if _, err := ev.WorkerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	dir, _ := filepath.Abs(filepath.Join("testdata", "pystages"))
	cmd := exec.CommandContext(ctx, testPython(t), "-m", "unittest", "-v", "test_fastcmp")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "PYTHONPATH="+ev.PyDir(), "KEVOLVE_FASTCMP_GPU=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("comparison kernel tests: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
)

// diag(A) @ B as a row scaling at KernelBench's size on the GPU: beats the
// traced bound (a matmul's FLOPs) by far, and passes with the
// algorithmic_shortcut note carrying its own work measured by Nsight
// Compute.
func TestGPUDiagMatmulShortcutPasses(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "gpu_ref_diag_matmul_kb.py")},
		Candidate: Source{Code: readTestdata(t, "diag_matmul_broadcast.py")}, Target: "nvidia", Timeout: 600 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s\n%s", res.Verdict, dump(res))
	}
	notes := strings.Join(res.Notes, "\n")
	if res.SOL == nil || res.SOL.OwnWork == nil || !strings.Contains(notes, "algorithmic_shortcut:") || !strings.Contains(notes, "above the traced speed of light") {
		t.Fatalf("no algorithmic_shortcut with measured work: notes %q\n%s", res.Notes, dump(res))
	}
	w := res.SOL.OwnWork
	// It reads B and writes the output: 2 x 64 MiB give or take.
	if w.DRAMBytes < 32<<20 || w.DRAMBytes > 512<<20 || w.Kernels < 1 {
		t.Fatalf("measured own work implausible: %+v", w)
	}
	t.Logf("own work %+v; median %s; %.0f%% of the traced bound", *w, Seconds(res.Candidate.MedianS), *res.PctOfSol)
}

// The same candidate's own work, measured on the device, against a median
// below what that work needs at the device's ceilings: an integrity
// violation, not a shortcut.
func TestGPUImpossibleTimeForOwnWork(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	ctx := context.Background()
	l, err := ev.Acquire(ctx, "nvidia", "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	own := ev.ownWorkFor(target.NVIDIA, Source{Code: readTestdata(t, "gpu_ref_diag_matmul_kb.py")},
		Source{Code: readTestdata(t, "diag_matmul_broadcast.py")}, "", l.Env(), l.Exclusive)
	ceil, row, err := ev.ceilingsFor(ctx, target.NVIDIA, l.Device())
	if err != nil {
		t.Fatal(err)
	}
	w, err := own(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bound := ownBound(target.NVIDIA, w, ceil, row)
	if bound <= 0 {
		t.Fatalf("own work %+v gives no bound", w)
	}
	res := &EvalResult{SOL: &SOL{}}
	fast, detail := judgeShortcut(ctx, func(context.Context) (OwnWork, error) { return w, nil }, target.NVIDIA, bound/20, ceil, row, res)
	if !fast || len(res.Notes) != 0 {
		t.Fatalf("an impossible time passed: %s %q", detail, res.Notes)
	}
	t.Logf("own work %+v bound %s: %s", w, Seconds(bound), detail)
}

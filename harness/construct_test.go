package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A constructor that works only on the host, as KernelBench builds models
// (CUDA-L1's level-2 problem 68 fails under the harness's device context):
// both models are built again on the host from the same seed, so the
// candidate's weights are the reference's and it passes with a note.
func TestConstructionOnTheHostAfterADeviceContextFailure(t *testing.T) {
	if gpuMode() {
		t.Skip("a CPU stand-in for a GPU-only failure")
	}
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_linear_min_sub.py")},
		Candidate: Source{Code: readTestdata(t, "ctor_host_only.py")}, Target: "cpu", Timeout: 300 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %q, want pass\n%s", res.Verdict, dump(res))
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "constructed on the host and moved, as KernelBench does") || !strings.Contains(notes, "same device") {
		t.Fatalf("notes %q do not say why the models were built on the host", res.Notes)
	}
	t.Logf("notes: %q", res.Notes)
}

package harness

import (
	"context"
	"testing"
	"time"
)

// A fresh evaluation's build and device seconds are kept for the next
// process's scheduling, per reference, candidate and target.
func TestStoredCostOfAnEvaluation(t *testing.T) {
	_, mk := baselineDB(t)
	ctx := context.Background()
	ref := readTestdata(t, "ref_normalize.py")
	res, err := mk(0).EvaluateRequest(ctx, EvalRequest{Reference: Source{Code: ref}, Candidate: Source{Code: candNormalize},
		Target: "cpu", Timeout: 150 * time.Second}, nil)
	if err != nil || res.Verdict != VerdictPass {
		t.Fatalf("evaluate: %v %+v", err, res)
	}
	next := mk(0)
	cases := []struct {
		name, ref, cand, target string
		ok                      bool
	}{
		{"same pair and target", ref, candNormalize, "cpu", true},
		{"same pair, any target", ref, candNormalize, "auto", true},
		{"another target", ref, candNormalize, "nvidia", false},
		{"another candidate", ref, candNormalize + "\n#\n", "cpu", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := next.StoredCost(ctx, c.ref, c.cand, c.target)
			if ok != c.ok {
				t.Fatalf("stored %v, want %v", ok, c.ok)
			}
			want, _ := CostOf(res)
			if ok && (got.WallS != want.WallS || got.DeviceS != want.DeviceS || got.BuildS != want.BuildS || got.DeviceS <= 0 || got.BuildS <= 0) {
				t.Fatalf("stored %+v, want %+v", got, want)
			}
		})
	}
}

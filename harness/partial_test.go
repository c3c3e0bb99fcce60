package harness

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// TestAddPartial: an unreported outcome's stages become stage_s seconds,
// its steps and timing figures the result's partial; a job that ended
// before its first stage gets no partial, and figures that do not read as
// timing stats are dropped.
func TestAddPartial(t *testing.T) {
	steps := map[string]worker.Step{"correctness": {Done: 2, Total: 5}, "timing": {Done: 7}}
	cases := []struct {
		name      string
		out       worker.Outcome
		stageS    map[string]float64
		partial   bool
		candIters int
		detail    string
	}{
		{"timed out in timing", worker.Outcome{Stage: "timing", Steps: steps,
			Stages:  map[string]worker.StageTime{"correctness": {Outside: 3 * time.Second}, "timing": {Outside: time.Second, Inside: 2 * time.Second}},
			Figures: map[string]map[string]json.RawMessage{"timing": {"candidate": json.RawMessage(`{"median_s":0.5,"iters":7}`)}}},
			map[string]float64{"correctness": 3, "timing": 3}, true, 7, "; done: correctness 2/5, timing 7"},
		{"figures that are not stats", worker.Outcome{Stage: "timing", Stages: map[string]worker.StageTime{"timing": {Outside: time.Second}},
			Figures: map[string]map[string]json.RawMessage{"timing": {"candidate": json.RawMessage(`"fast"`)}}},
			map[string]float64{"timing": 1}, true, 0, ""},
		{"ended before its first stage", worker.Outcome{Stages: map[string]worker.StageTime{"start": {Outside: time.Second}}},
			map[string]float64{"start": 1}, false, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &EvalResult{}
			addPartial(&evalRun{}, res, &tc.out)
			for k, v := range tc.stageS {
				if res.StageS[k] != v {
					t.Errorf("stage_s[%s] = %v, want %v (all: %v)", k, res.StageS[k], v, res.StageS)
				}
			}
			if (res.Partial != nil) != tc.partial {
				t.Fatalf("partial %+v, want one: %v", res.Partial, tc.partial)
			}
			if res.Partial != nil {
				got := 0
				if res.Partial.Candidate != nil {
					got = res.Partial.Candidate.Iters
				}
				if got != tc.candIters || res.Partial.Stage != tc.out.Stage {
					t.Errorf("partial %+v: candidate iters %d, want %d", res.Partial, got, tc.candIters)
				}
			}
			if d := stepsDone(tc.out.Steps); d != tc.detail {
				t.Errorf("steps worded %q, want %q", d, tc.detail)
			}
		})
	}
}

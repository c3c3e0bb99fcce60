package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A stateful reference (KernelBench level-3 34_VanillaRNNHidden: a hidden
// state replaced by every call) is compared in step (issue 32, item 3): a
// candidate that advances the same state passes, in process and in the
// judge; one that ignores it is incorrect.
func TestJudgeStatefulReference(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU candidates")
	}
	cases := []struct {
		name, ref, cand, want string
		timing, stateful      bool
	}{
		{"honest_mirrors_state", "ref_rnn_hidden.py", "rnn_hidden_honest.py", VerdictPass, true, true},
		{"ignores_state", "ref_rnn_hidden.py", "rnn_hidden_stateless.py", VerdictIncorrect, false, true},
		// Not stateful (a BatchNorm: its running statistics change, its
		// training-mode outputs do not): the usual checks, no note.
		{"batchnorm_not_stateful", "ref_batchnorm.py", "batchnorm_batch_stats.py", VerdictPass, false, false},
	}
	ev := evaluator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := hostileCase{cand: tc.cand}
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, tc.ref)},
				Candidate: Source{Code: hc.candidateSource(t)}, Target: "cpu", SkipTiming: !tc.timing, Timeout: 300 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, dump(res))
			}
			if tc.want == VerdictPass && tc.stateful && (res.Judge == nil || res.Judge.Status != "verified" ||
				!strings.Contains(strings.Join(res.Judge.Notes, "\n"), "in step")) {
				t.Fatalf("the judge did not verify the pass in step\n%s", dump(res))
			}
			if strings.Contains(strings.Join(res.Notes, "\n"), "is stateful") != tc.stateful {
				t.Fatalf("a note on a stateful reference: %v, want %v\n%s", !tc.stateful, tc.stateful, dump(res))
			}
		})
	}
}

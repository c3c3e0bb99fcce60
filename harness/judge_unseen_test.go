package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The judge's re-check at shapes the candidate was not shown (issue 32,
// item 7): KernelBench-style module-level sizes halved and doubled, a
// corpus problem's SHAPES set scaled. An honest candidate passes with the
// shapes listed; one laid out for the shown shape is shape_specialized.
func TestJudgeUnseenShapes(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU candidates")
	}
	corpusSoftmax, err := os.ReadFile(filepath.Join("..", "corpus", "problems", "llm", "softmax", "reference.py"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ref, cand, shapes string
		want                    string
		// tried: a label each shape the judge ran at must include, in order.
		tried []string
	}{
		{"kernelbench_sizes_honest", readTestdata(t, "ref_kb_sizes.py"), "kb_sizes_honest.py", "", VerdictPass,
			[]string{"shown", "batch_size x0.5", "batch_size x2"}},
		{"kernelbench_sizes_hardcoded", readTestdata(t, "ref_kb_sizes.py"), "kb_sizes_hardcoded.py", "", VerdictShapeSpecialized,
			[]string{"shown", "batch_size x0.5"}},
		{"reference_writes_inputs_unseen_only", readTestdata(t, "ref_writes_unseen.py"), "writes_unseen_honest.py", "", VerdictPass,
			[]string{"shown", "batch_size x0.5", "dim x2"}},
		{"corpus_shapes_honest", string(corpusSoftmax), "softmax_written_out.py", "small", VerdictPass,
			[]string{"shown", "_S['B'] x0.5", "_S['V'] x2"}},
		{"corpus_shapes_shown_batch", string(corpusSoftmax), "softmax_shown_batch.py", "small", VerdictShapeSpecialized,
			[]string{"shown", "_S['B'] x0.5"}},
	}
	ev := evaluator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := hostileCase{cand: tc.cand}
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref},
				Candidate: Source{Code: hc.candidateSource(t)}, Target: "cpu", Shapes: tc.shapes, SkipTiming: true,
				Timeout: 300 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, dump(res))
			}
			if res.Judge == nil {
				t.Fatalf("no judge report\n%s", dump(res))
			}
			var labels []string
			for _, s := range res.Judge.ShapesTried {
				labels = append(labels, s.Label)
			}
			if strings.Join(labels, "|") != strings.Join(tc.tried, "|") {
				t.Fatalf("shapes tried %q, want %q\n%s", labels, tc.tried, dump(res))
			}
			if tc.want == VerdictShapeSpecialized {
				if d, ok := failedCheck(res, "shape_specialized"); !ok || !strings.Contains(d, "not shown") && !strings.Contains(d, "not at") {
					t.Fatalf("no failed check shape_specialized naming the shape\n%s", dump(res))
				}
			}
			t.Logf("tried %v; not tried %q; judge phases %v", res.Judge.ShapesTried, res.Judge.ShapesNotTried, res.Judge.PhaseS)
		})
	}
}

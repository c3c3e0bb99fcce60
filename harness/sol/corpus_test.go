package sol

import (
	"context"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/corpus"
)

// TestCorpusCounts traces the corpus' own references at every shape set
// (on meta tensors: no memory, seconds each) and compares with the
// hand-derived formulas in their metadata, computed with that set's
// variables and element size (the large sets are often bf16, the small ones
// fp32). Where our per-op conventions match the author's, FLOPs must agree
// within 1%; bytes ("each input read once, each output written once") must
// agree for every dense problem. Gather-style problems (embedding bags,
// jagged) are left out: their formulas count only the rows touched, which
// tracing cannot know.
func TestCorpusCounts(t *testing.T) {
	py := python(t)
	root, err := corpus.Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	both := []string{"llm/gemm_bf16", "llm/gemm_bias_gelu", "llm/layernorm", "llm/rmsnorm", "llm/rmsnorm_backward",
		"llm/rope", "llm/swiglu", "other/argmax", "other/conv1d", "other/cumsum", "other/relu", "other/sum_reduction",
		"rec/dcn_v2_cross", "rec/fm_second_order"}
	// Different FLOP conventions (e.g. softmax: ours 7 per element, the
	// corpus 5), same bytes.
	bytesOnly := []string{"llm/attention", "llm/cross_entropy", "llm/softmax", "rec/dlrm_dot_interaction"}
	check := func(name string, flops bool) {
		p, err := corpus.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Shapes) < 2 {
			t.Fatalf("%s has %d shape sets", name, len(p.Shapes))
		}
		for set := range p.Shapes {
			t.Run(name+"/"+set, func(t *testing.T) {
				t.Parallel()
				vars, err := p.FormulaVars(set)
				if err != nil {
					t.Fatal(err)
				}
				ref := p.ReferencePath(root)
				w, err := Trace(context.Background(), ref, TraceOptions{Python: py, Shapes: set, Device: "meta", Timeout: 90 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				df, err := corpus.FormulaValue(p.FLOPs, vars)
				if err != nil {
					t.Fatal(err)
				}
				db, err := corpus.FormulaValue(p.Bytes, vars)
				if err != nil {
					t.Fatal(err)
				}
				if flops && !within(w.FLOPs, df, 0.01) {
					t.Errorf("traced flops %.6g, declared %s = %.6g", w.FLOPs, p.FLOPs, df)
				}
				if !within(w.Bytes, db, 0.01) {
					t.Errorf("traced bytes %.6g, declared %s = %.6g (%s)", w.Bytes, p.Bytes, db, p.DtypeFor(set))
				}
				// The declared path through corpus.FormulaValue gives the formulas exactly.
				d, err := Count(context.Background(), ref, p.FLOPs, p.Bytes, p.DtypeFor(set), vars, corpus.FormulaValue, TraceOptions{Python: py})
				if err != nil || d.FLOPs != df || d.Bytes != db || d.Source != "declared" {
					t.Errorf("declared: %+v err %v", d, err)
				}
				t.Logf("traced %.4g FLOP %.4g B (%s) vs declared %.4g FLOP %.4g B", w.FLOPs, w.Bytes, w.Dtype, df, db)
			})
		}
	}
	for _, n := range both {
		check(n, true)
	}
	for _, n := range bytesOnly {
		check(n, false)
	}
}

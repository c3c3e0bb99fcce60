package corpus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The issue asks for these problems by name; losing one is a regression.
var requiredProblems = []string{
	"rec/embedding_bag_sum", "rec/embedding_bag_mean", "rec/jagged_to_padded_dense",
	"rec/dense_to_jagged", "rec/jagged_softmax", "rec/dlrm_dot_interaction",
	"rec/dcn_v2_cross", "rec/fm_second_order", "rec/sequence_truncation", "rec/bucketize_hash",
	"llm/rmsnorm", "llm/rmsnorm_backward", "llm/layernorm", "llm/softmax", "llm/swiglu",
	"llm/rope", "llm/attention", "llm/gemm_bf16", "llm/gemm_bias_gelu",
	"other/conv1d", "other/sum_reduction", "other/argmax", "other/cumsum",
}

func TestCorpusLoads(t *testing.T) {
	ps := List()
	if len(ps) < 24 {
		t.Fatalf("corpus has %d problems, want at least 24", len(ps))
	}
	for _, name := range requiredProblems {
		if _, err := Get(name); err != nil {
			t.Errorf("required problem: %v", err)
		}
	}
	if _, err := Get(Default); err != nil {
		t.Errorf("default problem: %v", err)
	}
	validDtypes := map[string]bool{"float32": true, "bfloat16": true, "float16": true, "int64": true}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			if p.Description == "" || p.FLOPs == "" || p.Bytes == "" || len(p.Tags) == 0 {
				t.Errorf("missing description, flops, bytes or tags: %+v", p)
			}
			for _, set := range []string{"large", "small"} {
				if dt := p.DtypeFor(set); !validDtypes[dt] {
					t.Errorf("dtype of %s set is %q", set, dt)
				}
				// Both formulas must evaluate to a positive number on every set.
				vars, err := p.FormulaVars(set)
				if err != nil {
					t.Fatal(err)
				}
				for what, f := range map[string]string{"flops": p.FLOPs, "bytes": p.Bytes} {
					v, err := FormulaValue(f, vars)
					if err != nil {
						t.Errorf("%s on %s set: %v", what, set, err)
					} else if v <= 0 {
						t.Errorf("%s on %s set = %g, want > 0", what, set, v)
					}
				}
			}
			// The large set must be far bigger than the small one (it is meant
			// to fill an H100, the small one to run on a CPU in well under a second).
			lv, _ := p.FormulaVars("large")
			sv, _ := p.FormulaVars("small")
			lb, _ := FormulaValue(p.Bytes, lv)
			sb, _ := FormulaValue(p.Bytes, sv)
			// Sets of different dtypes move different bytes per element: a
			// byte formula that does not say elem_bytes is right for one of
			// them at most.
			if p.DtypeFor("large") != p.DtypeFor("small") && !strings.Contains(p.Bytes, ElemBytesVar) {
				t.Errorf("bytes %q ignore the element size, but the sets are %s and %s", p.Bytes, p.DtypeFor("large"), p.DtypeFor("small"))
			}
			if lb < 64<<20 || sb > 16<<20 {
				t.Errorf("bytes: large set %.3g (want >= 64 MiB), small set %.3g (want <= 16 MiB)", lb, sb)
			}
			if _, ok := p.Starts["c"]; !ok {
				t.Errorf("no C start candidate")
			}
			src, err := p.ReferenceSource()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"class Model(", "def get_inputs(", "def get_init_inputs(", "SHAPES", "KEVOLVE_SHAPES"} {
				if !strings.Contains(src, want) {
					t.Errorf("reference.py lacks %q", want)
				}
			}
			for kind := range p.Starts {
				s, err := p.StartSource(kind)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(s, "class ModelNew(") {
					t.Errorf("start %s lacks class ModelNew", kind)
				}
			}
			if _, err := p.StartSource("hip"); err == nil {
				t.Errorf("StartSource(hip) succeeded on a problem without a HIP start")
			}
		})
	}
}

func TestGetMissSuggests(t *testing.T) {
	tests := []struct {
		query, wantIn string
	}{
		{"llm/rmsnrom", "llm/rmsnorm"},
		{"rmsnorm", "llm/rmsnorm"},
		{"rec/embedding_bag", "rec/embedding_bag_sum"},
		{"layer_norm", "llm/layernorm"},
	}
	for _, tc := range tests {
		_, err := Get(tc.query)
		if err == nil {
			t.Errorf("Get(%q) succeeded", tc.query)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantIn) {
			t.Errorf("Get(%q) error %q does not suggest %q", tc.query, err, tc.wantIn)
		}
	}
	if _, err := Get("zzzzzzzzzzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "device_info") {
		t.Errorf("Get of a far-off name: %v", err)
	}
}

func TestMaterialize(t *testing.T) {
	dir := t.TempDir()
	root, err := Materialize(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range List() {
		want, _ := p.ReferenceSource()
		got, err := os.ReadFile(p.ReferencePath(root))
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if string(got) != want {
			t.Errorf("%s: materialized reference differs from embedded", p.Name)
		}
		for kind, f := range p.Starts {
			if _, err := os.Stat(filepath.Join(root, p.Dir, f)); err != nil {
				t.Errorf("%s start %s: %v", p.Name, kind, err)
			}
		}
	}
	// A second call over a tampered file must restore it.
	ref := List()[0].ReferencePath(root)
	if err := os.WriteFile(ref, []byte("broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialize(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ref); string(b) == "broken" {
		t.Errorf("Materialize did not restore %s", ref)
	}
}

func TestParseMetaRejects(t *testing.T) {
	good := "name: x/y\nfamily: x\ndescription: d\ndtype: float32\nflops: \"1\"\nbytes: \"1\"\nshapes: {large: {N: 1}, small: {N: 1}}\ntags: [a]\nstarts: [c]\n"
	if _, err := parseMeta("x/y", []byte(good)); err != nil {
		t.Fatalf("good meta rejected: %v", err)
	}
	tests := []struct{ name, meta, dir string }{
		{"name mismatch", good, "x/z"},
		{"unknown field", good + "flop: \"2\"\n", "x/y"},
		{"unknown start", strings.Replace(good, "[c]", "[fortran]", 1), "x/y"},
		{"no small set", strings.Replace(good, ", small: {N: 1}", "", 1), "x/y"},
		{"no dtype", strings.Replace(good, "dtype: float32\n", "", 1), "x/y"},
		{"reserved variable", strings.Replace(good, "small: {N: 1}", "small: {N: 1, elem_bytes: 2}", 1), "x/y"},
		{"dtype of unknown size", strings.Replace(good, "dtype: float32", "dtype: {large: float32, small: complex32}", 1), "x/y"},
	}
	for _, tc := range tests {
		if _, err := parseMeta(tc.dir, []byte(tc.meta)); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// Built-ins resolve into the harness's Problem: the reference on disk, the
// declared counts of the shape set they were evaluated for, and the set
// asked for left as asked (the evaluator picks the target's default).
func TestResolverIntoHarnessProblem(t *testing.T) {
	ctx := context.Background()
	r := Resolver(nil, t.TempDir())
	for _, tc := range []struct{ shapes, workShapes string }{{"", "large"}, {"small", "small"}, {"large", "large"}} {
		p, err := r.Problem(ctx, "llm/rmsnorm", tc.shapes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p.Reference.Path); err != nil || p.Name != "llm/rmsnorm" || p.Shapes != tc.shapes ||
			p.Work.Shapes != tc.workShapes || !p.Work.Declared() || p.Work.FLOPsFormula == "" {
			t.Errorf("shapes %q: %+v (%v)", tc.shapes, p, err)
		}
	}
	if _, err := r.Problem(ctx, "llm/nope", ""); err == nil {
		t.Error("an unknown name resolved")
	}
}

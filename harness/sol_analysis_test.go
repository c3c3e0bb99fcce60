package harness

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// solCeilings stands for a device: datasheet-like figures for any key, an
// error for "unknown".
func solCeilings(_ context.Context, key string) (sol.Ceilings, error) {
	if key == "unknown" {
		return sol.Ceilings{}, errors.New(`unknown device key "unknown"`)
	}
	return sol.Ceilings{PeakFLOPS: map[string]float64{"fp32": 50e12}, MemBandwidth: 2e12, Source: "spec:test"}, nil
}

// solCorpus resolves one corpus name whose counts are declared for each
// shape set (small: 1e6 FLOPs, large: 1e9), as the corpus does.
var solCorpus = problem.ResolverFunc(func(_ context.Context, name, shapes string) (Problem, error) {
	if name != "llm/test" {
		return Problem{}, problem.Inputf("reference", "%q is neither a file nor a known corpus problem", name)
	}
	if shapes == "" {
		shapes = "large"
	}
	w := problem.Work{FLOPs: 1e9, Bytes: 1e8, Shapes: "large", Dtype: "fp32"}
	if shapes == "small" {
		w = problem.Work{FLOPs: 1e6, Bytes: 1e5, Shapes: "small", Dtype: "fp32"}
	}
	return Problem{Name: name, Reference: Source{Path: "/corpus/llm/test.py"}, Shapes: shapes, Work: w}, nil
})

// The SOL flow without a candidate or a trace: arguments checked before
// anything runs (each mistake named by its argument), declared counts of
// the shape set asked for (or the deps' default), the caller's counts
// winning over them, and the ceilings' failure said with what to do.
func TestSOLAnalysis(t *testing.T) {
	d := SOLDeps{Resolve: solCorpus, Ceilings: solCeilings}
	yes, no := true, false
	tests := []struct {
		name     string
		q        SOLQuery
		defShape string
		flops    float64
		score    *float64 // nil: no score expected
		arg      string   // the InputError's argument; "" = no input error
		err      string   // another error's text
	}{
		{name: "declared", q: SOLQuery{FLOPs: 1e12, Bytes: 1e9}, flops: 1e12},
		{name: "corpus large", q: SOLQuery{Reference: "llm/test"}, flops: 1e9},
		{name: "corpus small", q: SOLQuery{Reference: "llm/test", Shapes: "small"}, flops: 1e6},
		{name: "default shapes", q: SOLQuery{Reference: "llm/test"}, defShape: "small", flops: 1e6},
		{name: "device key keeps the default set", q: SOLQuery{Reference: "llm/test", Device: "h100"}, defShape: "small", flops: 1e9},
		{name: "caller wins", q: SOLQuery{Reference: "llm/test", FLOPs: 5e9, Bytes: 5e8}, flops: 5e9},
		{name: "incorrect scores 0", q: SOLQuery{FLOPs: 1e12, Bytes: 1e9, CandidateS: 0.1, ReferenceS: 0.2, Correct: &no}, flops: 1e12, score: new(float64)},
		{name: "negative", q: SOLQuery{FLOPs: 1e12, Bytes: 1e9, CandidateS: -1}, arg: "candidate_s"},
		{name: "timeout", q: SOLQuery{FLOPs: 1e12, Bytes: 1e9, TimeoutS: 4000}, arg: "timeout_s"},
		{name: "no work", q: SOLQuery{FLOPs: 1e12}, arg: "reference"},
		{name: "candidate and times", q: SOLQuery{Reference: "llm/test", Candidate: "c.py", Correct: &yes}, arg: "candidate"},
		{name: "candidate alone", q: SOLQuery{Candidate: "c.py", FLOPs: 1, Bytes: 1}, arg: "reference"},
		{name: "no evaluator", q: SOLQuery{Reference: "llm/test", Candidate: "c.py"}, arg: "candidate"},
		{name: "unknown name", q: SOLQuery{Reference: "llm/none"}, arg: "reference"},
		{name: "ceilings", q: SOLQuery{FLOPs: 1, Bytes: 1, Device: "unknown"}, err: "ceilings: unknown device key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := d
			d.DefaultShapes = tt.defShape
			rep, err := SOLAnalysis(context.Background(), tt.q, d)
			var ie *problem.InputError
			switch {
			case tt.arg != "":
				if !errors.As(err, &ie) || ie.Arg != tt.arg {
					t.Fatalf("want an input error on %s, got %v", tt.arg, err)
				}
			case tt.err != "":
				if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("want %q, got %v", tt.err, err)
				}
			case err != nil:
				t.Fatal(err)
			case rep.FLOPs != tt.flops || rep.TSolS <= 0:
				t.Fatalf("FLOPs %g (want %g), t_sol %g", rep.FLOPs, tt.flops, rep.TSolS)
			case tt.score != nil && (rep.SolScore == nil || *rep.SolScore != *tt.score):
				t.Fatalf("sol_score %v, want %g", rep.SolScore, *tt.score)
			}
		})
	}
	if _, err := SOLAnalysis(context.Background(), SOLQuery{FLOPs: 1, Bytes: 1}, SOLDeps{}); err == nil || !strings.Contains(err.Error(), "no ceilings provider") {
		t.Errorf("no ceilings: %v", err)
	}
}

// An evaluation here runs the small set unless a GPU is usable (NVIDIA or
// AMD), and `sol` bounds the same.
func TestEvalShapes(t *testing.T) {
	for _, tt := range []struct {
		py   *toolchain.PythonEnv
		want string
	}{
		{nil, "small"},
		{&toolchain.PythonEnv{}, "small"},
		{&toolchain.PythonEnv{CUDAUsable: true}, ""},
		{&toolchain.PythonEnv{ROCmUsable: true}, ""},
	} {
		if got := EvalShapes(device.Report{Python: tt.py}); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.py, got, tt.want)
		}
	}
}

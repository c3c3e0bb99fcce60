package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func solServer(t *testing.T, prov CeilingsProvider) *server.MCPServer {
	t.Helper()
	py := toolchaintest.Python(t)
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(SolAnalysis(prov, sol.TraceOptions{Python: py}, corpus.Resolver(nil, t.TempDir()), nil))
	return s
}

// fixedCeilings stands for the lead's provider: datasheet-like figures for
// any key, an error for "unknown".
func fixedCeilings(_ context.Context, key string) (sol.Ceilings, error) {
	if key == "unknown" {
		return sol.Ceilings{}, errors.New("unknown device key \"unknown\"")
	}
	return sol.Ceilings{PeakFLOPS: map[string]float64{"fp32": 50e12, "bf16": 800e12}, MemBandwidth: 3e12, Source: "spec:test"}, nil
}

func TestSolAnalysisTool(t *testing.T) {
	c := toolstest.Connect(t, solServer(t, fixedCeilings))
	ref, _ := filepath.Abs(filepath.Join("..", "harness", "sol", "testdata", "problems", "matmul.py"))

	// Traced: a 256x512 @ 512x128 fp32 matmul.
	var rep sol.Report
	toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", map[string]any{"reference": ref, "candidate_s": 2e-6, "reference_s": 4e-6}), &rep)
	if rep.FLOPs != 2*256*128*512 || rep.Bytes != 917504 || rep.WorkSource != "traced" || rep.SolScore == nil || len(rep.Detail) == 0 {
		t.Fatalf("traced: %+v", rep)
	}
	// Declared, with an incorrect candidate.
	var d sol.Report
	toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", map[string]any{"flops": 1e12, "bytes": 1e9, "dtype": "bf16", "candidate_s": 0.002, "reference_s": 0.004, "correct": false}), &d)
	if d.Bound != "compute" || d.SolScore == nil || *d.SolScore != 0 || d.PctOfSol == nil {
		t.Fatalf("declared: %+v", d)
	}
	// A corpus name: its declared counts, not a trace.
	var cp sol.Report
	toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", map[string]any{"reference": "llm/rmsnorm", "shapes": "small"}), &cp)
	if cp.WorkSource != "declared" || cp.FLOPs <= 0 || cp.Bytes <= 0 || cp.TSolS <= 0 {
		t.Fatalf("corpus name: %+v", cp)
	}
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"flops": 1e12}, "both flops and bytes"},
		{map[string]any{"reference": "/nonexistent.py"}, "no such file"},
		{map[string]any{"reference": "llm/no_such_problem"}, "neither a file nor a known corpus problem"},
		{map[string]any{"flops": 1e12, "bytes": 1e9, "candidate_s": -1.0}, "candidate_s"},
		{map[string]any{"flops": 1e12, "bytes": 1e9, "device": "unknown"}, "unknown device"},
	}
	for _, b := range bad {
		res := toolstest.Call(t, c, "sol_analysis", b.args)
		if !res.IsError || !strings.Contains(toolstest.Text(res), b.want) {
			t.Errorf("%v: want tool error with %q, got %s", b.args, b.want, toolstest.Text(res))
		}
	}
}

// sol_analysis takes a candidate file, as `kevolve-mcp sol --candidate`
// does: the candidate is checked and timed, and its measured times score it.
func TestSolAnalysisCandidateFile(t *testing.T) {
	ev := rkEvaluator(t)
	dir := t.TempDir()
	ref, cand := filepath.Join(dir, "ref.py"), filepath.Join(dir, "cand.py")
	for p, src := range map[string]string{ref: rkRef, cand: rkGood} {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(SolAnalysis(fixedCeilings, sol.TraceOptions{Python: toolchaintest.Python(t)}, corpus.Resolver(nil, t.TempDir()), ev))
	c := toolstest.Connect(t, s)

	var rep sol.Report
	toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", map[string]any{"reference": ref, "candidate": cand, "target": "cpu", "device": "h100"}), &rep)
	if rep.CandidateS == nil || *rep.CandidateS <= 0 || rep.ReferenceS == nil || *rep.ReferenceS <= 0 || rep.SolScore == nil || *rep.SolScore <= 0 {
		t.Fatalf("candidate not measured into the report: %+v", rep)
	}
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"reference": ref, "candidate": cand, "candidate_s": 1e-3}, "not both"},
		{map[string]any{"flops": 1e9, "bytes": 1e6, "candidate": cand}, "candidate needs reference"},
		{map[string]any{"reference": ref, "candidate": filepath.Join(dir, "none.py")}, "no such file"},
		{map[string]any{"reference": ref, "candidate": cand, "target": "tpu"}, "target"},
	}
	for _, b := range bad {
		res := toolstest.Call(t, c, "sol_analysis", b.args)
		if !res.IsError || !strings.Contains(toolstest.Text(res), b.want) {
			t.Errorf("%v: want tool error with %q, got %s", b.args, b.want, toolstest.Text(res))
		}
	}
	// Without an evaluator the candidate is refused in words, not ignored.
	c2 := toolstest.Connect(t, solServer(t, fixedCeilings))
	if res := toolstest.Call(t, c2, "sol_analysis", map[string]any{"reference": ref, "candidate": cand}); !res.IsError || !strings.Contains(toolstest.Text(res), "cannot be evaluated here") {
		t.Errorf("no evaluator: %s", toolstest.Text(res))
	}
}

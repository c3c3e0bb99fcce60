package tools

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func TestProfileKernelTool(t *testing.T) {
	py := toolchaintest.Python(t)
	locked := 0
	acquire := func(context.Context) (func(), error) { locked++; return func() { locked-- }, nil }
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(ProfileKernel(profile.Options{Python: py, Backend: "cpu"}, acquire))
	c := toolstest.Connect(t, s)
	dir, _ := filepath.Abs(filepath.Join("..", "harness", "profile", "testdata", "cpu"))
	ref, cand := filepath.Join(dir, "ref_mlp.py"), filepath.Join(dir, "cand_mlp.py")

	var rep profile.Report
	toolstest.Decode(t, toolstest.Call(t, c, "profile_kernel", map[string]any{"reference": ref, "candidate": cand}), &rep)
	if !rep.Available || rep.Mode != "kernel" || rep.CPU == nil || len(rep.CPU.Ops) == 0 || locked != 0 {
		t.Fatalf("kernel mode: %+v (lock count %d)", rep, locked)
	}
	var m profile.Report
	toolstest.Decode(t, toolstest.Call(t, c, "profile_kernel", map[string]any{"reference": ref, "mode": "model"}), &m)
	if m.Model == nil || len(m.Model.Ops) == 0 || m.Model.Ops[0].AmdahlHeadroom == nil {
		t.Fatalf("model mode: %+v", m)
	}
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"reference": ref}, "candidate"},
		{map[string]any{"reference": ref, "candidate": cand, "mode": "trace"}, "mode"},
		{map[string]any{"reference": ref, "candidate": cand, "backend": "vtune"}, "backend"},
		{map[string]any{"reference": "/nonexistent.py", "candidate": cand}, "no such file"},
	}
	for _, b := range bad {
		res := toolstest.Call(t, c, "profile_kernel", b.args)
		if !res.IsError || !strings.Contains(toolstest.Text(res), b.want) {
			t.Errorf("%v: want tool error with %q, got %s", b.args, b.want, toolstest.Text(res))
		}
	}
	// No Python: a result that says what is missing, not an error.
	s2 := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s2.AddTools(ProfileKernel(profile.Options{Python: "/nonexistent/python3"}, nil))
	var miss profile.Report
	toolstest.Decode(t, toolstest.Call(t, toolstest.Connect(t, s2), "profile_kernel", map[string]any{"reference": ref, "candidate": cand}), &miss)
	if miss.Available || !strings.Contains(miss.Missing, "KEVOLVE_PYTHON") {
		t.Fatalf("missing python: %+v", miss)
	}
}

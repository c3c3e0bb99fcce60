package tools

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func TestProfileKernelTool(t *testing.T) {
	py := toolchaintest.Python(t)
	dir, _ := filepath.Abs(filepath.Join("..", "harness", "profile", "testdata", "cpu"))
	ref, cand := filepath.Join(dir, "ref_mlp.py"), filepath.Join(dir, "cand_mlp.py")
	// Two fake CPU devices: the profile leases one (exclusively) and gives it back.
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
		Devices: map[target.Name][]lease.Device{target.CPU: {{Index: 0, Name: "fake cpu 0"}, {Index: 1, Name: "fake cpu 1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	resolve := problem.ResolverFunc(func(_ context.Context, name, shapes string) (problem.Problem, error) {
		if name == "test/mlp" {
			return problem.Problem{Name: name, Reference: problem.Source{Path: ref}, Shapes: shapes}, nil
		}
		return problem.Problem{}, errors.New("unknown problem")
	})
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(ProfileKernel(profile.Options{Python: py, Backend: "cpu"}, ev, resolve))
	c := toolstest.Connect(t, s)
	// Device 1 is held alone by someone else: a profile asking for it waits,
	// one asking for any device takes device 0.
	other, err := ev.Acquire(context.Background(), "cpu", "1", true)
	if err != nil {
		t.Fatal(err)
	}

	var rep profile.Report
	toolstest.Decode(t, toolstest.Call(t, c, "profile_kernel", map[string]any{"reference": "test/mlp", "candidate": cand}), &rep)
	if !rep.Available || rep.Mode != "kernel" || rep.CPU == nil || len(rep.CPU.Ops) == 0 {
		t.Fatalf("kernel mode on a corpus name: %+v", rep)
	}
	other.Release()
	if res := toolstest.Call(t, c, "profile_kernel", map[string]any{"reference": ref, "candidate": cand, "device": "7"}); !res.IsError || !strings.Contains(toolstest.Text(res), `device "7": no such cpu device`) {
		t.Fatalf("unknown device: %s", toolstest.Text(res))
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
		{map[string]any{"reference": "no/such", "candidate": cand}, "neither a file nor a known corpus problem"},
	}
	for _, b := range bad {
		res := toolstest.Call(t, c, "profile_kernel", b.args)
		if !res.IsError || !strings.Contains(toolstest.Text(res), b.want) {
			t.Errorf("%v: want tool error with %q, got %s", b.args, b.want, toolstest.Text(res))
		}
	}
	// No Python: a result that says what is missing, not an error.
	s2 := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s2.AddTools(ProfileKernel(profile.Options{Python: "/nonexistent/python3"}, nil, nil))
	var miss profile.Report
	toolstest.Decode(t, toolstest.Call(t, toolstest.Connect(t, s2), "profile_kernel", map[string]any{"reference": ref, "candidate": cand}), &miss)
	if miss.Available || !strings.Contains(miss.Missing, "KEVOLVE_PYTHON") {
		t.Fatalf("missing python: %+v", miss)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/optimize"
)

// TestModelProfileOverMCPNamesHostStarts: an agent that calls model_profile
// over stdio with no target gets this host's target and the start kernels
// of its language, as the command line does: CUDA on a GPU host
// (KEVOLVE_GPU=1), C on a CPU one. Over MCP the tool once passed "auto"
// and no language, so a GPU host was told to start from C kernels.
func TestModelProfileOverMCPNamesHostStarts(t *testing.T) {
	py := toolchaintest.Python(t)
	wantTarget, wantLang := "cpu", "c"
	if os.Getenv("KEVOLVE_GPU") == "1" {
		wantTarget, wantLang = "nvidia", "cuda"
	}
	dir := t.TempDir()
	c, err := client.NewStdioMCPClient(binary, []string{"XDG_DATA_HOME=" + dir}, "--db", filepath.Join(dir, "k.db"), "--python", py, "--stdio")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	model, _ := filepath.Abs("../../search/optimize/testdata/swiglu_mlp.py")
	req := mcp.CallToolRequest{}
	req.Params.Name = "model_profile"
	req.Params.Arguments = map[string]any{"model": model}
	res, err := c.CallTool(toolchaintest.Context(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var s optimize.Summary
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError || json.Unmarshal(b, &s) != nil {
		t.Fatalf("model_profile: %+v", res.Content)
	}
	if s.Target != wantTarget || s.Language != wantLang {
		t.Fatalf("model_profile resolved target %q language %q on device %q, want %q %q", s.Target, s.Language, s.Device, wantTarget, wantLang)
	}
	starts := 0
	for _, op := range s.Ops {
		t.Logf("%-10s %5.1f%%  %s", op.Sig, 100*op.Share, op.Note)
		if strings.Contains(op.Note, "bundled "+wantLang+" kernel of ") {
			starts++
		}
		if strings.Contains(op.Note, "bundled ") && !strings.Contains(op.Note, "bundled "+wantLang+" ") {
			t.Errorf("%s starts from another language's kernel: %s", op.Sig, op.Note)
		}
	}
	if starts == 0 {
		t.Errorf("no region names a bundled %s start kernel on %s", wantLang, s.Device)
	}
}

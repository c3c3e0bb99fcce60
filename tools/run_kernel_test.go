package tools

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

const rkRef = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, x):
        return torch.softmax(x, dim=-1) * self.scale

def get_inputs():
    return [torch.randn(32, 128)]

def get_init_inputs():
    return [2.0]
`

const rkGood = `
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True) * self.scale
`

func rkEvaluator(t *testing.T) *harness.Evaluator {
	t.Helper()
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return ev
}

func TestRunKernelOverMCP(t *testing.T) {
	ev := rkEvaluator(t)
	dir := t.TempDir()
	refPath := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(refPath, []byte(rkRef), 0o644); err != nil {
		t.Fatal(err)
	}
	resolve := problem.ResolverFunc(func(_ context.Context, name, shapes string) (problem.Problem, error) {
		if name == "test/softmax" {
			return problem.Problem{Name: name, Reference: harness.Source{Code: rkRef}, Shapes: shapes}, nil
		}
		return problem.Problem{}, errors.New("unknown problem")
	})
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	srv.AddTools(RunKernel(ev, resolve))
	c := toolstest.Connect(t, srv)
	target := "cpu"
	if os.Getenv("KEVOLVE_GPU") == "1" {
		target = "nvidia"
	}

	cases := []struct {
		name    string
		args    map[string]any
		verdict string // "" means a tool error is expected
		errHas  string
	}{
		{"inline_pass", map[string]any{"reference_source": rkRef, "candidate_source": rkGood, "target": target, "skip_timing": true}, harness.VerdictPass, ""},
		{"path_and_corpus_name", map[string]any{"reference": "test/softmax", "candidate_source": rkGood, "target": target, "skip_timing": true, "trials": 2, "seed": 5}, harness.VerdictPass, ""},
		{"file_reference_calls_softmax", map[string]any{"reference": refPath, "candidate_source": strings.Replace(rkGood, "e = (x - x.amax(dim=-1, keepdim=True)).exp()\n        return e / e.sum(dim=-1, keepdim=True) * self.scale", "return torch.softmax(x, dim=-1) * self.scale", 1), "target": target, "skip_timing": true}, harness.VerdictIntegrityViolation, ""},
		{"hang_times_out", map[string]any{"reference_source": rkRef, "candidate_source": strings.Replace(rkGood, "e = (x", "while True: pass\n        e = (x", 1), "target": target, "timeout_s": 4, "skip_timing": true}, harness.VerdictTimeout, ""},
		{"unknown_problem", map[string]any{"reference": "no/such", "candidate_source": rkGood}, "", "neither a file nor a known corpus problem"},
		{"missing_candidate", map[string]any{"reference_source": rkRef}, "", "candidate"},
		{"bad_shapes", map[string]any{"reference_source": rkRef, "candidate_source": rkGood, "shapes": "huge"}, "", "shapes"},
		{"bad_target", map[string]any{"reference_source": rkRef, "candidate_source": rkGood, "target": "tpu"}, "", "target"},
		{"missing_candidate_file", map[string]any{"reference_source": rkRef, "candidate": "/nonexistent/c.py"}, "", "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := toolstest.Call(t, c, "run_kernel", tc.args)
			if tc.verdict == "" {
				if !res.IsError || !strings.Contains(toolstest.Text(res), tc.errHas) {
					t.Fatalf("want a tool error containing %q, got %s", tc.errHas, toolstest.Text(res))
				}
				return
			}
			var r harness.EvalResult
			toolstest.Decode(t, res, &r)
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %s", r.Verdict, tc.verdict, toolstest.Text(res))
			}
			t.Logf("verdict %s wall %.2fs", r.Verdict, r.WallS)
		})
	}

	// Schema validation: a string where a number belongs is refused.
	if res := toolstest.Call(t, c, "run_kernel", map[string]any{"reference_source": rkRef, "candidate_source": rkGood, "trials": "five"}); !res.IsError {
		t.Fatalf("a string for trials was accepted")
	}

	// Progress notifications arrive only when a token was sent.
	var mu sync.Mutex
	var msgs []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			msgs = append(msgs, n.Method)
			mu.Unlock()
		}
	})
	call := func(token any) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "run_kernel"
		req.Params.Arguments = map[string]any{"reference_source": rkRef, "candidate_source": rkGood, "target": target, "skip_timing": true, "seed": 77}
		if token != nil {
			req.Params.Meta = &mcp.Meta{ProgressToken: token}
		}
		if _, err := c.CallTool(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	call(nil)
	mu.Lock()
	without := len(msgs)
	mu.Unlock()
	call("tok-1")
	mu.Lock()
	with := len(msgs) - without
	mu.Unlock()
	if without != 0 || with == 0 {
		t.Fatalf("progress notifications: %d without a token, %d with", without, with)
	}
}

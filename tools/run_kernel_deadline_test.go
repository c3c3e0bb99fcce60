package tools

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// dlRef is a ReLU over 256 Ki values: microseconds for torch.
const dlRef = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 4096)]

def get_init_inputs():
    return []
`

// dlSlow is an honest but slow ReLU: a Python loop that takes the maximum
// 256 times per value, about 5 s a call on a 2-core host. Its two trials and
// 25 timed calls cannot fit 60 s.
const dlSlow = `
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.reshape(-1).tolist()
        out = [0.0] * len(flat)
        for i, v in enumerate(flat):
            r = 0.0
            for _ in range(256):
                r = v if v > 0 else 0.0
            out[i] = r
        return torch.tensor(out, dtype=x.dtype).reshape(x.shape)
`

// TestRunKernelDeadlineAnswersWithPartialFigures is issue 36's acceptance:
// run_kernel with timeout_s 60 on a candidate that cannot finish answers
// within 66 s (the timeout plus the load grant's tenth), with the seconds
// of the stages it reached, how far they got, and progress notifications
// per stage while it ran.
func TestRunKernelDeadlineAnswersWithPartialFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 60 s evaluation")
	}
	const timeout = 60 * time.Second
	ev := rkEvaluator(t)
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false))
	srv.AddTools(RunKernel(ev, nil))
	c := toolstest.Connect(t, srv)
	var mu sync.Mutex
	stages := map[string]int{}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			if m, ok := n.Params.AdditionalFields["message"].(string); ok {
				stages[m]++
			}
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_kernel"
	req.Params.Arguments = map[string]any{"reference_source": dlRef, "candidate_source": dlSlow, "target": "cpu",
		"trials": 2, "timeout_s": timeout.Seconds()}
	req.Params.Meta = &mcp.Meta{ProgressToken: "deadline"}
	t0 := time.Now()
	res, err := c.CallTool(context.Background(), req)
	wall := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	var r harness.EvalResult
	toolstest.Decode(t, res, &r)
	partial, _ := json.Marshal(r.Partial)
	t.Logf("answered in %.1f s: verdict %s, stage %s, stage_s %v, partial %s, checks %+v", wall.Seconds(), r.Verdict, r.Stage, r.StageS, partial, r.Checks)
	mu.Lock()
	t.Logf("progress notifications by stage: %v", stages)
	mu.Unlock()
	if r.Verdict != harness.VerdictTimeout {
		t.Fatalf("verdict %s, want timeout", r.Verdict)
	}
	if limit := timeout + timeout/10; wall > limit {
		t.Errorf("answered after %s, over the %s the deadline promises", wall, limit)
	}
	if r.Partial == nil || r.Partial.Stage == "" || r.Partial.Steps["correctness"].Done == 0 {
		t.Errorf("no partial figures, or no correctness trial counted: %s", partial)
	}
	if r.StageS[r.Stage] <= 0 || r.StageS["load_candidate"] <= 0 || r.StageS["correctness"] <= 0 {
		t.Errorf("stage_s lacks the seconds of the stages reached (%s, load_candidate, correctness): %v", r.Stage, r.StageS)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range []string{"load_candidate", "correctness"} {
		if stages[s] == 0 {
			t.Errorf("no progress notification for stage %s: %v", s, stages)
		}
	}
}

package tools

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

var threadsRe = regexp.MustCompile(`(?m)^THREADS = \d+`)

// TestEvolveAgentLoopGPU: the agent loop on the H100 with the CUDA start of
// llm/rmsnorm: three submits changing its THREADS tunable, each compiled,
// checked and timed on the GPU, with progress notifications while they run.
func TestEvolveAgentLoopGPU(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1")
	}
	c, _ := evolveServer(t)
	var info runs.RunInfo
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_start", map[string]any{"problem": "llm/rmsnorm", "target": "nvidia", "language": "cuda", "budget": 4}), &info)
	var progress atomic.Int64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	for i, threads := range []int{128, 512, 1024} {
		task := nextTask(t, c, info.RunID, true) // the code it edits
		req := mcp.CallToolRequest{}
		req.Params.Name = "evolve_submit"
		req.Params.Meta = &mcp.Meta{ProgressToken: fmt.Sprintf("gpu-%d", i)}
		req.Params.Arguments = map[string]any{"run_id": info.RunID, "node_id": task.NodeID, "wait_s": 600, "notes": fmt.Sprintf("THREADS=%d", threads),
			"code": threadsRe.ReplaceAllString(task.Parent.Code, fmt.Sprintf("THREADS = %d", threads))}
		t0 := time.Now()
		r, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var sub runs.SubmitResult
		toolstest.Decode(t, r, &sub)
		if sub.State != runs.SubmitEvaluated || sub.Node.Result == nil || sub.Node.Result.Verdict != search.VerdictPass {
			t.Fatalf("submit THREADS=%d: %+v", threads, sub.Node)
		}
		t.Logf("THREADS=%d: %.3g s, fitness %.3f, %.1f%% of SOL, submit took %s", threads, sub.Node.Result.TimeS, sub.Node.Result.Fitness,
			sub.Node.Result.PctOfSOL, time.Since(t0).Round(time.Millisecond))
	}
	var best runs.BestResult
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_best", map[string]any{"run_id": info.RunID}), &best)
	if best.Summary.Evaluations != 4 || best.Node.Result.Fitness <= 0 || progress.Load() == 0 {
		t.Fatalf("best %+v, summary %+v, %d progress notifications", best.Node.Result, best.Summary, progress.Load())
	}
	t.Logf("best: node %d, fitness %.3f, speedup over start %.3f", best.Node.ID, best.Node.Result.Fitness, best.Summary.Best.SpeedupOverStart)
}

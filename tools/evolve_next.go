package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveNextInput is evolve_next's arguments.
type EvolveNextInput struct {
	RunID string  `json:"run_id" jsonschema:"The run, from evolve_start."`
	WaitS float64 `json:"wait_s,omitempty" jsonschema:"How long to wait for the run to be ready (it may be evaluating a kernel), in seconds: default 40, at most 45. State busy means ask again."`
}

// EvolveNext returns the evolve_next tool.
func EvolveNext(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_next",
		mcp.WithDescription("The next node of your search to improve (a run from evolve_start). State ready: task.node_id is the node the search policy selected, "+
			"with task.parent (its code, verdict, timing, failed checks, log, speed of light figures), task.sol_gap, task.siblings and task.lineage "+
			"(what was already tried from it and before it, and how it fared), task.best, the reference program and the budget left. "+
			"Write a faster ModelNew derived from task.parent.code and call evolve_submit with the same node_id. Calling evolve_next again before "+
			"submitting returns the same task. State busy: the run is still evaluating; call again. A paused run (server restart) is resumed; "+
			"a finished run is an error that says so."),
		mcp.WithInputSchema[EvolveNextInput](),
		mcp.WithOutputSchema[runs.NextResult](),
		mcp.WithTitleAnnotation("Next kernel to improve"),
		mcp.WithReadOnlyHintAnnotation(false), // resumes a paused run; otherwise only reads
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true), // the same task until a kernel is submitted
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveNextInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_next"), nil
		}
		res, err := m.Next(ctx, in.RunID, waitFor(in.WaitS, 40))
		if err != nil {
			return toolErrorf("evolve_next: %v", err), nil
		}
		return structured(res), nil
	})}
}

// waitFor turns a wait_s argument into a duration: def seconds when unset,
// never above the status long poll's bound (under every client's timeout).
func waitFor(s, def float64) time.Duration {
	if s <= 0 {
		s = def
	}
	return min(time.Duration(s*float64(time.Second)), runs.MaxStatusWait)
}

package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveStatusInput is evolve_status's arguments.
type EvolveStatusInput struct {
	RunID string  `json:"run_id" jsonschema:"The run, from evolve or evolve_start."`
	Since int64   `json:"since,omitempty" jsonschema:"Events after this seq: the previous answer's next_since (0 = from the start)."`
	WaitS float64 `json:"wait_s,omitempty" jsonschema:"Long poll in seconds (default 30, at most 45); it returns at the first event."`
}

// EvolveStatus returns the evolve_status tool.
func EvolveStatus(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_status",
		mcp.WithDescription("Use to follow a run, above all a server-side one (evolve): a long poll that returns as soon as the run has events after since (evaluations, "+
			"new bests, supervisor actions, stops), or after wait_s (at most 45 s). Returns status (running, paused, done, stopped, failed), the summary "+
			"(evaluations, passed, best and start kernels with speedups and % of speed of light), the budget, the events, next_since for the next call, "+
			"and for a run you drive the node awaiting your kernel. Sends progress notifications while it waits, given a progress token."),
		mcp.WithInputSchema[EvolveStatusInput](),
		outputSchema[runs.StatusResult](),
		mcp.WithTitleAnnotation("Search status"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveStatusInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_status"), nil
		}
		if in.Since < 0 || in.WaitS < 0 {
			return toolErrorf("since and wait_s must not be negative"), nil
		}
		wait := waitFor(in.WaitS, 30)
		progress := progressFor(ctx, req)
		res, err := m.Status(ctx, in.RunID, in.Since, wait, func(msg string) { progress(msg, 0, 0) })
		if err != nil {
			return toolErrorf("evolve_status: %v", err), nil
		}
		return structured(res), nil
	})}
}

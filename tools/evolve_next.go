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
	RunID       string  `json:"run_id" jsonschema:"The run, from evolve_start."`
	WaitS       float64 `json:"wait_s,omitempty" jsonschema:"Seconds to wait for the run to be ready (default 40, at most 45); state busy means ask again."`
	IncludeCode bool    `json:"include_code,omitempty" jsonschema:"Inline the parent's code and the reference beside their URIs (for a parent you have not read)."`
}

// EvolveNext returns the evolve_next tool.
func EvolveNext(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_next",
		mcp.WithDescription("Use in the loop after evolve_start and after each evolve_submit: the next node to improve. State ready: task.node_id is the node picked; "+
			"task.parent its verdict, timing, failed checks, warnings, log and speed-of-light figures; task.sol_gap, task.siblings and task.lineage (what "+
			"was tried from it and before it), task.best and the budget left. The parent's code and the reference are resources (task.parent.code_uri, "+
			"task.problem.reference_uri); include_code inlines them. Write a faster ModelNew and call evolve_submit with that node_id. Until you submit, "+
			"the same task comes back. State busy: still evaluating, call again. A paused run is resumed."),
		mcp.WithInputSchema[EvolveNextInput](),
		outputSchemaDepth[runs.NextResult](2), // task.parent.code_uri, task.problem.reference_uri
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
		if res.Task != nil {
			res.Task = briefTask(*res.Task, in.IncludeCode)
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

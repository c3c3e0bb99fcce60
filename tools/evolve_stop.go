package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveStopInput is evolve_stop's arguments.
type EvolveStopInput struct {
	RunID  string `json:"run_id" jsonschema:"The run to stop."`
	Reason string `json:"reason,omitempty" jsonschema:"Why, one line for the run's record."`
}

// EvolveStop returns the evolve_stop tool.
func EvolveStop(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_stop",
		mcp.WithDescription("Use to end a run for good: nothing more is proposed or evaluated (a kernel under evaluation finishes and is kept); every node stays, and "+
			"evolve_best and evolve_status still answer. A stopped run cannot be resumed: start a new one from its best kernel (evolve_start with "+
			"start_source). Stopping a finished run changes nothing."),
		mcp.WithInputSchema[EvolveStopInput](),
		outputSchema[runs.RunInfo](),
		mcp.WithTitleAnnotation("Stop a search"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true), // a stopped run cannot be resumed
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveStopInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_stop"), nil
		}
		run, err := m.Stop(ctx, in.RunID, in.Reason)
		if err != nil {
			return toolErrorf("evolve_stop: %v", err), nil
		}
		return structured(m.Info(run, fmt.Sprintf("run %s is %s; evolve_best returns its best kernel", run.ID, run.Status))), nil
	})}
}

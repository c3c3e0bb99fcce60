package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveBestInput is evolve_best's arguments.
type EvolveBestInput struct {
	RunID string `json:"run_id" jsonschema:"The run."`
}

// EvolveBest returns the evolve_best tool.
func EvolveBest(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_best",
		mcp.WithDescription("Use to collect a run's result: the best kernel so far with its full code, its evaluation (verdict, checks, time, speedups over eager and "+
			"torch.compile, % of speed of light, fitness) and the run's summary (with the speedup over the start kernel). Only kernels that passed every "+
			"check count. Works on running, paused and finished runs."),
		mcp.WithInputSchema[EvolveBestInput](),
		outputSchema[runs.BestResult](),
		mcp.WithTitleAnnotation("Best kernel of a search"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveBestInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_best"), nil
		}
		res, err := m.Best(ctx, in.RunID)
		if err != nil {
			return toolErrorf("evolve_best: %v", err), nil
		}
		return structured(res), nil
	})}
}

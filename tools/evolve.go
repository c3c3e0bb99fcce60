package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveInput is evolve's arguments: a run spec and the operator.
type EvolveInput struct {
	RunSpecInput
	Operator string `json:"operator,omitempty" jsonschema:"Who proposes kernels: {OPERATORS} (default tuner: no LLM). To propose them yourself, use evolve_start."`
}

// Evolve returns the evolve tool: a run driven on the server by a
// server-side operator, returned at once.
func Evolve(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve",
		mcp.WithDescription("Use to let the server search alone: start a run whose kernels a server-side operator proposes (tuner by default: no LLM, it tunes the start "+
			"kernel's TUNABLES = {...} and launch parameters) and get its id at once. Follow it with evolve_status, end it with evolve_stop, read the "+
			"result with evolve_best. To write the kernels yourself, use evolve_start."),
		mcp.WithInputSchema[EvolveInput](),
		fillSchema(operatorsPlaceholder, operator.Spelled()),
		outputSchema[runs.RunInfo](),
		mcp.WithTitleAnnotation("Start a server-side search"),
		mcp.WithReadOnlyHintAnnotation(false), // creates a run that evaluates kernels
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve"), nil
		}
		op := in.Operator
		if op == "" {
			op = tuner.Name
		}
		if op == runs.OperatorName {
			return toolErrorf("operator mcp means you propose the kernels: call evolve_start instead"), nil
		}
		sr, msg := startRequest(in.RunSpecInput, op, 30)
		if msg != "" {
			return toolErrorf("%s", msg), nil
		}
		progress := progressFor(ctx, req)
		progress("creating the run", 0, 0)
		run, err := m.Start(ctx, sr)
		if err != nil {
			return toolErrorf("evolve: %v", err), nil
		}
		progress(fmt.Sprintf("run %s started", run.ID), 1, 1)
		return structured(m.Info(run, fmt.Sprintf("run %s is running on the server with operator %s. Call evolve_status with run_id %s (and since = next_since) to follow it, evolve_best for the best kernel so far.", run.ID, run.Operator, run.ID))), nil
	})}
}

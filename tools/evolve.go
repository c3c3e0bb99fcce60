package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveInput is evolve's arguments: a run spec and the operator.
type EvolveInput struct {
	RunSpecInput
	Operator string `json:"operator,omitempty" jsonschema:"Who proposes kernels on the server: tuner (default; no LLM: searches the kernel's TUNABLES and launch parameters). For a run you drive yourself use evolve_start."`
}

// Evolve returns the evolve tool: a run driven on the server by a
// server-side operator, returned at once.
func Evolve(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve",
		mcp.WithDescription("Start a kernel search driven on the server by a built-in operator (tuner: no LLM, it tunes the start kernel's TUNABLES = {...} "+
			"and launch parameters such as BLOCK sizes, num_warps and threads). Returns the run id at once and keeps running in the server; "+
			"watch it with evolve_status (a long poll with recent events), stop it with evolve_stop, and read the result with evolve_best. "+
			"Use evolve_start instead to write the kernels yourself."),
		mcp.WithInputSchema[EvolveInput](),
		mcp.WithOutputSchema[runs.RunInfo](),
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
			op = "tuner"
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

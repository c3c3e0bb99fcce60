package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveResumeInput is evolve_resume's arguments.
type EvolveResumeInput struct {
	RunID         string  `json:"run_id" jsonschema:"The run to continue."`
	Budget        int     `json:"budget,omitempty" jsonschema:"A new evaluation budget (the total, the start kernel's included); extends a run that ended on its budget."`
	TimeS         float64 `json:"time_s,omitempty" jsonschema:"A new wall-clock budget in seconds (the total over the run's life)."`
	Plateau       int     `json:"plateau,omitempty" jsonschema:"A new plateau: stop after this many evaluations without a new best."`
	TargetSpeedup float64 `json:"target_speedup,omitempty" jsonschema:"A new target fitness."`
}

// EvolveResume returns the evolve_resume tool.
func EvolveResume(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_resume",
		mcp.WithDescription("Use to continue a paused run (its server ended; evaluated nodes are kept and an unfinished evaluation runs again), to take over a run whose "+
			"server was killed, or, with a larger budget, to extend a run that ended on its budget. A server-side run carries on by itself; for a run you "+
			"drive, call evolve_next. Resuming a run this server already drives changes nothing."),
		mcp.WithInputSchema[EvolveResumeInput](),
		outputSchema[runs.RunInfo](),
		mcp.WithTitleAnnotation("Resume a search"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveResumeInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_resume"), nil
		}
		if in.Budget < 0 || in.TimeS < 0 || in.Plateau < 0 || in.TargetSpeedup < 0 {
			return toolErrorf("budget, time_s, plateau and target_speedup must not be negative"), nil
		}
		patch := &runs.BudgetView{Evals: in.Budget, TimeS: in.TimeS, Plateau: in.Plateau, TargetSpeedup: in.TargetSpeedup}
		run, err := m.ResumeWith(ctx, in.RunID, patch)
		if err != nil {
			return toolErrorf("evolve_resume: %v", err), nil
		}
		next := "evolve_status follows it"
		if run.Operator == runs.OperatorName {
			next = "call evolve_next for the node to improve"
		}
		return structured(m.Info(run, fmt.Sprintf("run %s continues: %s", run.ID, next))), nil
	})}
}

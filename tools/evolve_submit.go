package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// EvolveSubmitInput is evolve_submit's arguments.
type EvolveSubmitInput struct {
	RunID    string  `json:"run_id" jsonschema:"The run, from evolve_start."`
	NodeID   int64   `json:"node_id" jsonschema:"The node you improved: task.node_id from evolve_next. Your kernel becomes its child."`
	Code     string  `json:"code,omitempty" jsonschema:"The kernel: a Python module defining class ModelNew (same constructor and forward as the reference's Model). It may use from kevolve import load_cuda/load_c, Triton or load_inline. Give this or path."`
	Path     string  `json:"path,omitempty" jsonschema:"A file holding the kernel, instead of code."`
	Language string  `json:"language,omitempty" jsonschema:"The kernel's kind when it differs from its parent's: c, cuda, triton or hip."`
	Notes    string  `json:"notes,omitempty" jsonschema:"One line on what this kernel tries (shown to later tasks as what siblings tried, and in the report)."`
	WaitS    float64 `json:"wait_s,omitempty" jsonschema:"How long to wait for the evaluation, in seconds: default 50, at most 600. If it takes longer the answer is state evaluating and the result arrives in evolve_status; nothing is lost."`
}

// EvolveSubmit returns the evolve_submit tool.
func EvolveSubmit(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_submit",
		mcp.WithDescription("Submit your kernel for the node evolve_next gave you. The server writes it as that node's child, checks it (correctness over several "+
			"random inputs, integrity checks) and times it against the reference, then answers with the child (verdict, failed checks, log, time, "+
			"speedup, % of speed of light, fitness), whether it is the run's new best, and the run's summary. Code identical to an earlier kernel is "+
			"answered from the store. An evaluation can take from seconds (CPU) to minutes (a cold CUDA build); progress notifications are sent "+
			"when you give a progress token. If you disconnect, the evaluation still completes and is kept. Then call evolve_next."),
		mcp.WithInputSchema[EvolveSubmitInput](),
		mcp.WithOutputSchema[runs.SubmitResult](),
		mcp.WithTitleAnnotation("Submit a kernel"),
		mcp.WithReadOnlyHintAnnotation(false), // adds a node to the run and evaluates it
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in EvolveSubmitInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_submit"), nil
		}
		wait := 50 * time.Second
		if in.WaitS > 0 {
			wait = min(time.Duration(in.WaitS*float64(time.Second)), 10*time.Minute)
		}
		progress := progressFor(ctx, req)
		res, err := m.Submit(ctx, runs.SubmitRequest{RunID: in.RunID, NodeID: in.NodeID, Code: in.Code, Path: in.Path, Language: in.Language,
			Notes: in.Notes, Wait: wait, Progress: func(msg string) { progress(msg, 0, 0) }})
		if err != nil {
			return toolErrorf("evolve_submit: %v", err), nil
		}
		return structured(res), nil
	})}
}

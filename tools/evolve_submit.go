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
	NodeID   int64   `json:"node_id" jsonschema:"task.node_id from evolve_next; your kernel becomes its child."`
	Code     string  `json:"code,omitempty" jsonschema:"The kernel: Python defining class ModelNew (the reference Model's constructor and forward); it may use kevolve's load_cuda/load_c, Triton or load_inline. Or give path."`
	Path     string  `json:"path,omitempty" jsonschema:"A file holding the kernel, instead of code."`
	Language string  `json:"language,omitempty" jsonschema:"The kernel's kind when not its parent's: c, cuda, triton or hip."`
	Notes    string  `json:"notes,omitempty" jsonschema:"One line on what it tries (later tasks show it)."`
	WaitS    float64 `json:"wait_s,omitempty" jsonschema:"Seconds to wait for the evaluation (default 50, at most 600); past it the state is evaluating and evolve_status gets the result."`
}

// EvolveSubmit returns the evolve_submit tool.
func EvolveSubmit(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_submit",
		mcp.WithDescription("Use to hand in your kernel for the node evolve_next gave you: the server adds it as that node's child, checks it (correctness on several "+
			"random inputs, integrity) and times it against the reference. Returns the child's verdict, failed checks, warnings, log, time, speedups, % "+
			"of speed of light and fitness, whether it is the run's new best, and the run's summary; your code is not echoed (node.code_uri). Identical "+
			"code is answered from the store. Past wait_s the state is evaluating and evolve_status gets the result; a dropped call loses nothing. Then "+
			"call evolve_next."),
		mcp.WithInputSchema[EvolveSubmitInput](),
		outputSchema[runs.SubmitResult](),
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
		if res.Node != nil {
			res.Node = briefNode(*res.Node, res.RunID) // the caller has the code it sent
		}
		return structured(res), nil
	})}
}

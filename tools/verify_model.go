package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// VerifyModelInput is verify_model's arguments.
type VerifyModelInput struct {
	Model   string `json:"model" jsonschema:"The KernelBench-format model file."`
	Target  string `json:"target,omitempty" jsonschema:"auto (default), cpu or nvidia."`
	Export  string `json:"export,omitempty" jsonschema:"Write the verified kevolve_kernels package into this folder (import kevolve_kernels; kevolve_kernels.patch(model))."`
	Compile *bool  `json:"compile,omitempty" jsonschema:"Also time torch.compile of the original (default on a GPU; slow on a CPU)."`
}

// Request is what the tool asks of the model flow, as the optimize
// command asks it; the operator is the client, as for model_profile.
func (in VerifyModelInput) Request() optimize.Request {
	return optimize.Request{Model: in.Model, Target: in.Target, Export: in.Export, Compile: in.Compile, Operator: runs.OperatorName}
}

// VerifyModel returns the verify_model tool.
func VerifyModel(svc *optimize.Service) server.ServerTool {
	tool := mcp.NewTool("verify_model",
		mcp.WithDescription("Use after deploy: run the model patched with the registry's kernels (the exported kevolve_kernels package) against the original "+
			"on fresh inputs: correct within the output dtype's tolerance, timed like the harness (eager; torch.compile on a GPU or when asked), beside "+
			"Amdahl's prediction; engaged counts each deployed kernel's calls in a profiler trace (one that never ran is not deployed). Takes ~30-120 s."),
		mcp.WithInputSchema[VerifyModelInput](),
		outputSchema[optimize.Summary](),
		mcp.WithTitleAnnotation("Verify a patched model end to end"),
		mcp.WithReadOnlyHintAnnotation(false), // writes the export and the problem files
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in VerifyModelInput) (*mcp.CallToolResult, error) {
		s, err := svc.Verify(ctx, in.Request())
		if err != nil {
			return toolErrorf("verify_model: %v", err), nil
		}
		return structured(s), nil
	})}
}

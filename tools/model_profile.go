package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// ModelProfileInput is model_profile's arguments.
type ModelProfileInput struct {
	Model    string  `json:"model" jsonschema:"A KernelBench-format model file (Model, get_inputs, get_init_inputs)."`
	Target   string  `json:"target,omitempty" jsonschema:"auto (default), cpu or nvidia."`
	MinShare float64 `json:"min_share,omitempty" jsonschema:"Regions under this share of the time are listed but not worth a search (default 0.02)."`
}

// Request is what the tool asks of the model flow, as the optimize
// command asks it. The operator is the client: it searches the regions
// itself or names an operator per run (evolve), so the notes do not
// assume the tuner's limits.
func (in ModelProfileInput) Request() optimize.Request {
	return optimize.Request{Model: in.Model, Target: in.Target, MinShare: in.MinShare, Operator: runs.OperatorName}
}

// ModelProfile returns the model_profile tool.
func ModelProfile(svc *optimize.Service) server.ServerTool {
	tool := mcp.NewTool("model_profile",
		mcp.WithDescription("Use to start making a whole model faster: capture it with TorchDynamo, profile it on the device, rank its "+
			"regions (attention, GEMMs with epilogues, norms, pointwise chains) by the time they would save at their speed of light (with Amdahl's bound), "+
			"and extract each as a KernelBench problem file with the model's shapes, dtypes and weights. Search each op's problem_file with evolve or "+
			"evolve_start, then deploy the run and call verify_model. Takes ~10-60 s."),
		mcp.WithInputSchema[ModelProfileInput](),
		outputSchema[optimize.Summary](),
		mcp.WithTitleAnnotation("Profile a model and extract its hot operators"),
		mcp.WithReadOnlyHintAnnotation(false), // writes the problem files and their rows
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in ModelProfileInput) (*mcp.CallToolResult, error) {
		s, err := svc.Profile(ctx, in.Request())
		if err != nil {
			return toolErrorf("model_profile: %v", err), nil
		}
		return structured(s), nil
	})}
}

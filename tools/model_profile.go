package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/optimize"
)

// ModelProfileInput is model_profile's arguments.
type ModelProfileInput struct {
	Model    string  `json:"model" jsonschema:"Path to a KernelBench-format model file (Model, get_inputs, get_init_inputs): a KernelBench level-1..3 file or a user's model wrapped the same way."`
	Target   string  `json:"target,omitempty" jsonschema:"auto (default), cpu or nvidia."`
	MinShare float64 `json:"min_share,omitempty" jsonschema:"Regions under this share of the model's time are listed but not worth a search (default 0.02)."`
}

// ModelProfile returns the model_profile tool.
func ModelProfile(svc *optimize.Service) server.ServerTool {
	tool := mcp.NewTool("model_profile",
		mcp.WithDescription("Step 1 of the model flow: profile a whole model on the device (torch.profiler; each op's own kernel time, none counted twice), "+
			"rank its operators by the share of the model's time they would save at their speed of light (with Amdahl's bound 1/(1-share) beside it), "+
			"and extract each hot region (RMSNorm/LayerNorm, a SwiGLU or silu*mul chain, a GEMM with its activation epilogue, a lone GEMM) as a "+
			"KernelBench problem file with the model's shapes, dtypes and weights. Each op gives its problem_file: search it with evolve (problem = that file; "+
			"start = the bundled kernel named in bundled, or write one), then deploy the run and call verify_model. Takes ~10-60 s."),
		mcp.WithInputSchema[ModelProfileInput](),
		mcp.WithOutputSchema[optimize.Summary](),
		mcp.WithTitleAnnotation("Profile a model and extract its hot operators"),
		mcp.WithReadOnlyHintAnnotation(false), // writes the problem files and their rows
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in ModelProfileInput) (*mcp.CallToolResult, error) {
		s, err := svc.Profile(ctx, in.Model, targetOrAuto(in.Target), in.MinShare)
		if err != nil {
			return toolErrorf("model_profile: %v", err), nil
		}
		return structured(s), nil
	})}
}

func targetOrAuto(t string) string {
	if t == "" {
		return "auto"
	}
	return t
}

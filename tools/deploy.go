package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/deploy"
	"github.com/kevolve/kevolve-mcp/search/optimize"
)

// DeployInput is deploy's arguments.
type DeployInput struct {
	RunID string `json:"run_id" jsonschema:"A finished or paused run on a problem model_profile extracted."`
}

// DeployOutput is what deploy did.
type DeployOutput struct {
	Deployed bool          `json:"deployed"`
	Entry    *deploy.Entry `json:"entry,omitempty"`
	Why      string        `json:"why,omitempty"`
}

// Deploy returns the deploy tool.
func Deploy(svc *optimize.Service) server.ServerTool {
	tool := mcp.NewTool("deploy",
		mcp.WithDescription("Use after searching a problem that model_profile extracted: put the run's best kernel into the registry, keyed by op, "+
			"shapes, dtype, constants and arch. Only a kernel faster than what it replaces beyond the measurement's spread, and by at least 2%, is "+
			"deployed (why says why not); a faster entry already there is kept. At run time it serves exactly those shapes, dtype and arch, and the "+
			"original operators everything else. Then call verify_model."),
		mcp.WithInputSchema[DeployInput](),
		outputSchema[DeployOutput](),
		mcp.WithTitleAnnotation("Deploy a run's best kernel"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false), // a slower kernel never replaces a faster entry
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in DeployInput) (*mcp.CallToolResult, error) {
		e, why, err := svc.Deploy(ctx, in.RunID)
		if err != nil {
			return toolErrorf("deploy: %v", err), nil
		}
		if e != nil {
			e.Source = ""
		}
		return structured(DeployOutput{Deployed: e != nil, Entry: e, Why: why}), nil
	})}
}

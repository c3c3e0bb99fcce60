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
	RunID string `json:"run_id" jsonschema:"A finished or paused run whose problem model_profile extracted."`
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
		mcp.WithDescription("Put a run's best kernel into the registry, keyed by (operator signature, shapes, dtype, constants, device arch) from the "+
			"extracted problem it searched. Only a kernel faster than the operators it replaces by more than the measurement's spread and at least 2% "+
			"is deployed (why says why not); a faster entry already there is kept. At run time the guard dispatches to it only on exactly those shapes, "+
			"dtype and arch, and falls back to the original operators everywhere else. Then call verify_model."),
		mcp.WithInputSchema[DeployInput](),
		mcp.WithOutputSchema[DeployOutput](),
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

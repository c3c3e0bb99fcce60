package tools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
)

// checksURI is the resource that lists every check run_kernel (and every
// evolve evaluation) runs.
const checksURI = "kevolve://checks"

// ChecksResource returns kevolve://checks: the catalogue of the checks the
// evaluator's worker runs (checksMarkdown), read from the same registry at
// each read.
func ChecksResource(ev *harness.Evaluator) server.ServerResource {
	return server.ServerResource{
		Resource: mcp.NewResource(checksURI, "run_kernel checks",
			mcp.WithResourceDescription("Every correctness and integrity check of an evaluation: name, stage, the verdict its failure gives, what passing means; and the dtype tolerances"),
			mcp.WithMIMEType("text/markdown")),
		Handler: func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			cs, err := registeredChecks(ev)
			if err != nil {
				return nil, fmt.Errorf("the check registry: %w", err)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: checksURI, MIMEType: "text/markdown", Text: checksMarkdown(cs)}}, nil
		},
	}
}

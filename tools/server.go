package tools

import (
	_ "embed"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/retrieval"
)

//go:embed instructions.md
var instructions string

// Version is the server version reported at initialize; main sets it from
// the build.
var Version = "0.1.0-dev"

// Deps are everything the tools call into. Each tool constructor takes only
// what it needs; New hands them out.
type Deps struct {
	Logger    *slog.Logger
	Devices   *device.Cache
	Knowledge *retrieval.Index
}

// New builds the MCP server with every tool registered.
func New(d Deps) *server.MCPServer {
	s := server.NewMCPServer("kevolve-mcp", Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithInputSchemaValidation(),
	)
	s.AddTools(All(d)...)
	docs, docTemplate := KnowledgeResources(d.Knowledge)
	s.AddResources(docs...)
	s.AddResourceTemplates(docTemplate)
	return s
}

// All returns every tool, in a stable order (the schema snapshot test and
// tools/list depend on it).
func All(d Deps) []server.ServerTool {
	return []server.ServerTool{
		DeviceInfo(d.Devices),
		CompileKernel(nil),
		SearchKnowledge(d.Knowledge),
	}
}

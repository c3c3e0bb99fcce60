package tools

import (
	_ "embed"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

//go:embed instructions.md
var instructions string

// Version is the server version reported at initialize; main sets it from
// the build.
var Version = "0.1.0-dev"

// Deps are everything the tools call into. Each tool constructor takes only
// what it needs; New hands them out. A nil part makes its tools answer with
// a tool error that says what is missing, so the schema never changes with
// the machine.
type Deps struct {
	Logger    *slog.Logger
	Devices   *device.Cache
	Knowledge *retrieval.Index
	Evaluator *harness.Evaluator
	Resolve   problem.Resolver // corpus names; nil: files and inline source only
	Ceilings  CeilingsProvider
	Trace     sol.TraceOptions
	Profile   profile.Options
	// Workspace are the folders compile_kernel reads paths from; nil:
	// compile.DefaultRoots (the working directory and the cache).
	Workspace []string
	// Runs drives the searches (evolve, evolve_start...); nil = no store.
	Runs *runs.Manager
	// Model is the model flow (model_profile, deploy, verify_model); nil:
	// those tools answer that the server lacks the worker or the database.
	Model *optimize.Service
}

// New builds the MCP server with every tool and resource registered.
func New(d Deps) *server.MCPServer {
	tools := All(d)
	s := server.NewMCPServer("kevolve-mcp", Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithInputSchemaValidation(),
		server.WithHooks(argumentErrorHooks(tools)), // schema rejections in words
		// One size limit for every argument of every tool (limits.go).
		server.WithToolHandlerMiddleware(limitArguments),
	)
	s.AddTools(tools...)
	docs, docTemplate := KnowledgeResources(d.Knowledge)
	problems, problemTemplate := ProblemResources()
	s.AddResources(append(append(docs, problems...), ChecksResource(d.Evaluator))...)
	s.AddResourceTemplates(docTemplate, problemTemplate)
	s.AddResourceTemplates(RunResources(d.Runs)...)
	return s
}

// All returns every tool, in a stable order (the schema snapshot test and
// tools/list depend on it).
func All(d Deps) []server.ServerTool {
	return []server.ServerTool{
		DeviceInfo(d.Devices),
		CompileKernel(nil, d.Workspace...),
		RunKernel(d.Evaluator, d.Resolve),
		ProfileKernel(d.Profile, d.Evaluator, d.Resolve),
		SolAnalysis(d.Ceilings, d.Trace, d.Resolve, d.Evaluator),
		SearchKnowledge(d.Knowledge),
		Evolve(d.Runs),
		EvolveStart(d.Runs),
		EvolveNext(d.Runs),
		EvolveSubmit(d.Runs),
		EvolveStatus(d.Runs),
		EvolveStop(d.Runs),
		EvolveResume(d.Runs),
		EvolveBest(d.Runs),
		ModelProfile(d.Model),
		Deploy(d.Model),
		VerifyModel(d.Model),
	}
}

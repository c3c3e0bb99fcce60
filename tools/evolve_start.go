package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// RunSpecInput is what evolve_start and evolve share: the problem, the
// start kernel, how to search and when to stop.
type RunSpecInput struct {
	Problem       string  `json:"problem,omitempty" jsonschema:"A corpus name such as llm/rmsnorm (problem:// resources) or a KernelBench-format file. Or give problem_source."`
	ProblemSource string  `json:"problem_source,omitempty" jsonschema:"The problem as inline Python source, instead of problem."`
	Start         string  `json:"start,omitempty" jsonschema:"Start kernel file defining ModelNew (default: the corpus one for target and language; required for a problem file or source)."`
	StartSource   string  `json:"start_source,omitempty" jsonschema:"The start kernel as inline source, instead of start."`
	Target        string  `json:"target,omitempty" jsonschema:"cpu, nvidia or auto (default: a usable GPU, else the CPU)."`
	Language      string  `json:"language,omitempty" jsonschema:"Corpus start kernel: c, cuda or triton (default c on cpu, cuda on nvidia)."`
	Shapes        string  `json:"shapes,omitempty" jsonschema:"Corpus shape set: small or large (default small on cpu, large on a GPU)."`
	Policy        string  `json:"policy,omitempty" jsonschema:"greedy (default), uct (MCTS) or evolve (islands)."`
	Baseline      string  `json:"baseline,omitempty" jsonschema:"Fitness is the speedup over eager (default) or compile."`
	Budget        int     `json:"budget,omitempty" jsonschema:"Evaluations, the start kernel's included (default 20; 30 for evolve)."`
	TimeS         float64 `json:"time_s,omitempty" jsonschema:"Wall-clock budget in seconds (0 = none)."`
	Plateau       int     `json:"plateau,omitempty" jsonschema:"Stop after this many evaluations without a new best (0 = off)."`
	TargetSpeedup float64 `json:"target_speedup,omitempty" jsonschema:"Stop once the best reaches this fitness (0 = off)."`
	Draft         int     `json:"draft,omitempty" jsonschema:"Independent children of the start kernel before the policy proper (default 0; 4 with policy evolve)."`
	Memory        string  `json:"memory,omitempty" jsonschema:"What tasks show of the history: inherit (default: siblings and lineage), compare (siblings) or clean_slate."`
	Seed          int64   `json:"seed,omitempty" jsonschema:"Policy seed (default: from the clock)."`
	Parallel      int     `json:"parallel,omitempty" jsonschema:"Evaluations in flight for a server-side operator (default 1; two per GPU on a fleet)."`
}

// startRequest turns the arguments into the manager's request; a non-empty
// message says what to change.
func startRequest(in RunSpecInput, operator string, defaultEvals int) (runs.StartRequest, string) {
	r := runs.StartRequest{Problem: in.Problem, ProblemSource: in.ProblemSource, Start: in.Start, StartSource: in.StartSource,
		Target: in.Target, Language: in.Language, Shapes: in.Shapes, Policy: in.Policy, Baseline: in.Baseline, Operator: operator,
		Draft: in.Draft, Seed: in.Seed, Memory: search.MemoryMode(in.Memory), Parallel: in.Parallel}
	if in.Problem == "" && in.ProblemSource == "" {
		return r, "problem (a corpus name or a KernelBench-format file) or problem_source is required"
	}
	if in.Budget < 0 || in.TimeS < 0 || in.Plateau < 0 || in.TargetSpeedup < 0 || in.Draft < 0 || in.Parallel < 0 {
		return r, "budget, time_s, plateau, target_speedup, draft and parallel must not be negative"
	}
	if in.Parallel > engine.MaxParallel {
		return r, fmt.Sprintf("parallel %d: at most %d evaluations in flight", in.Parallel, engine.MaxParallel)
	}
	switch r.Memory {
	case "", search.MemoryInherit, search.MemoryCompare, search.MemoryCleanSlate:
	default:
		return r, fmt.Sprintf("memory %q: use inherit, compare or clean_slate", in.Memory)
	}
	if in.Draft == 0 {
		r.Draft = launch.DraftUnset // the policy's default (search/launch)
	}
	r.Budget = search.Budget{Evals: in.Budget, Time: time.Duration(in.TimeS * float64(time.Second)), Plateau: in.Plateau, TargetSpeedup: in.TargetSpeedup}
	if r.Budget.Evals == 0 && r.Budget.Time == 0 && r.Budget.Plateau == 0 {
		r.Budget.Evals = defaultEvals
	}
	return r, ""
}

// noRuns is the tool error of a server without a search store.
func noRuns(tool string) *mcp.CallToolResult {
	return toolErrorf("%s is not available: this server has no search store (the database could not be opened; see the server log)", tool)
}

// EvolveStart returns the evolve_start tool: a run whose operator is the
// client itself.
func EvolveStart(m *runs.Manager) server.ServerTool {
	tool := mcp.NewTool("evolve_start",
		mcp.WithDescription("Use to optimize a kernel yourself while the server keeps the search: start a run that YOU drive (operator mcp). The server keeps the graph "+
			"of kernels, picks which one to improve next, and checks and times every kernel you write. Returns the run id at once; the start kernel is "+
			"evaluated first. Then loop: evolve_next (the node to improve) -> write a faster ModelNew -> evolve_submit (its verdict, time and the run's "+
			"best), until the budget is spent; evolve_best returns the best kernel. A run survives a server restart paused: evolve_next resumes it."),
		mcp.WithInputSchema[RunSpecInput](),
		outputSchema[runs.RunInfo](),
		mcp.WithTitleAnnotation("Start a search you drive"),
		mcp.WithReadOnlyHintAnnotation(false), // creates a run and evaluates its start kernel
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(false), // every call is a new run
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in RunSpecInput) (*mcp.CallToolResult, error) {
		if m == nil {
			return noRuns("evolve_start"), nil
		}
		sr, msg := startRequest(in, runs.OperatorName, 20)
		if msg != "" {
			return toolErrorf("%s", msg), nil
		}
		run, err := m.Start(ctx, sr)
		if err != nil {
			return toolErrorf("evolve_start: %v", err), nil
		}
		return structured(m.Info(run, fmt.Sprintf("run %s started; its start kernel is being evaluated. Call evolve_next with run_id %s for the first node to improve.", run.ID, run.ID))), nil
	})}
}

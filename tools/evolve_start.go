package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

// RunSpecInput is what evolve_start and evolve share: the problem, the
// start kernel, how to search and when to stop.
type RunSpecInput struct {
	Problem       string  `json:"problem,omitempty" jsonschema:"The problem: a corpus name such as llm/rmsnorm or other/relu (see the problem:// resources), or a path to a KernelBench-format Python file (Model, get_inputs, get_init_inputs). Give this or problem_source."`
	ProblemSource string  `json:"problem_source,omitempty" jsonschema:"The problem as inline KernelBench-format Python source, instead of problem."`
	Start         string  `json:"start,omitempty" jsonschema:"Path to the start kernel (a Python file defining ModelNew). Default: the corpus start kernel for the target and language. Required for a problem given as a file or source."`
	StartSource   string  `json:"start_source,omitempty" jsonschema:"The start kernel as inline Python source defining ModelNew, instead of start."`
	Target        string  `json:"target,omitempty" jsonschema:"Where kernels run: cpu, nvidia or auto (default: a usable GPU, else the CPU)."`
	Language      string  `json:"language,omitempty" jsonschema:"Which corpus start kernel: c, cuda or triton (default c on cpu, cuda on nvidia)."`
	Shapes        string  `json:"shapes,omitempty" jsonschema:"Corpus shape set: small or large (default small on cpu, large on a GPU)."`
	Policy        string  `json:"policy,omitempty" jsonschema:"Selection policy: greedy (default; expand the best node), uct (MCTS) or evolve (islands)."`
	Baseline      string  `json:"baseline,omitempty" jsonschema:"Fitness is the speedup over eager (default) or compile (torch.compile)."`
	Budget        int     `json:"budget,omitempty" jsonschema:"Evaluations, the start kernel's included (default 20 for evolve_start, 30 for evolve)."`
	TimeS         float64 `json:"time_s,omitempty" jsonschema:"Wall-clock budget in seconds (0 = none)."`
	Plateau       int     `json:"plateau,omitempty" jsonschema:"Stop after this many evaluations without a new best (0 = off)."`
	TargetSpeedup float64 `json:"target_speedup,omitempty" jsonschema:"Stop once the best kernel reaches this fitness (0 = off)."`
	Draft         int     `json:"draft,omitempty" jsonschema:"Draft phase: this many independent children of the start kernel before the policy proper (default 0; 4 for evolve)."`
	Memory        string  `json:"memory,omitempty" jsonschema:"What each task shows of the search's history: inherit (default: siblings and lineage), compare (siblings only) or clean_slate (neither)."`
	Seed          int64   `json:"seed,omitempty" jsonschema:"Random seed of the policy (default: from the clock)."`
	Parallel      int     `json:"parallel,omitempty" jsonschema:"Evaluations in flight at once for a server-side operator (evolve): default 1, or two per GPU when the server evaluates on a fleet (--workers). A run you drive (evolve_start) takes one kernel at a time."`
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
		r.Draft = -1
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
		mcp.WithDescription("Start a kernel search that YOU drive (operator mcp): the server keeps the search graph, picks which kernel to improve next, "+
			"and checks and times every kernel you write. Returns the run id at once; the start kernel is evaluated first. "+
			"Then loop: evolve_next (the node to improve, with its code, result, checks, speed-of-light gap and what was tried) -> write a faster ModelNew -> "+
			"evolve_submit (its verdict, timing and the run's best). The run ends when its budget is spent; evolve_best returns the best kernel. "+
			"Runs survive a server restart paused: evolve_next resumes them."),
		mcp.WithInputSchema[RunSpecInput](),
		mcp.WithOutputSchema[runs.RunInfo](),
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

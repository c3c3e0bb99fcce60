package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// RunKernelInput is run_kernel's arguments.
type RunKernelInput struct {
	Reference       string  `json:"reference,omitempty" jsonschema:"A KernelBench-format file (Model, get_inputs, get_init_inputs) or a corpus name such as llm/rmsnorm. Or give reference_source."`
	ReferenceSource string  `json:"reference_source,omitempty" jsonschema:"The problem as inline Python source, instead of reference."`
	Candidate       string  `json:"candidate,omitempty" jsonschema:"A Python file defining ModelNew (the reference Model's constructor and forward). Or give candidate_source."`
	CandidateSource string  `json:"candidate_source,omitempty" jsonschema:"The candidate as inline source; it may use kevolve's load_cuda/load_hip/load_c (fast builds), Triton or load_inline."`
	Target          string  `json:"target,omitempty" jsonschema:"nvidia, amd, cpu or auto (default: the best device found)."`
	Device          string  `json:"device,omitempty" jsonschema:"A device index or UUID from device_info (default: any free one)."`
	TimeoutS        float64 `json:"timeout_s,omitempty" jsonschema:"The answer's deadline in seconds (default 180; a busy device's wait aside, host load adds at most a tenth). Past it: timeout, with stage_s and partial."`
	Trials          int     `json:"trials,omitempty" jsonschema:"Correctness trials, each on fresh random inputs (default 5)."`
	Seed            int64   `json:"seed,omitempty" jsonschema:"Base seed of weights and inputs (default 42)."`
	SkipTiming      bool    `json:"skip_timing,omitempty" jsonschema:"Check correctness and integrity only; no timing."`
	Retime          bool    `json:"retime,omitempty" jsonschema:"Measure again instead of answering from the cache of identical requests."`
	Shapes          string  `json:"shapes,omitempty" jsonschema:"Corpus shape set: large (fills a GPU) or small (seconds on a CPU). Default: large on a GPU, small on the CPU."`
	KernelPolicy    string  `json:"kernel_policy,omitempty" jsonschema:"default: library calls beside its own kernels allowed, a plain-torch rewrite passes (noted no_own_kernel); kernelbench: a kernel of its own required; strict: every heavy op in its own kernels."`
}

// Request is the evaluation the arguments ask for: the problem they
// name, the candidate and the options. The CLI's eval builds it here too,
// so a shell and an agent get the same checks.
func (in RunKernelInput) Request(ctx context.Context, r problem.Resolver) (harness.Problem, harness.Candidate, harness.Options, error) {
	p, err := problem.Resolve(ctx, problem.Ref{Reference: in.Reference, ReferenceSource: in.ReferenceSource, Shapes: in.Shapes}, r)
	if err != nil {
		return p, harness.Candidate{}, harness.Options{}, err
	}
	c, err := problem.ParseCandidate(in.Candidate, in.CandidateSource)
	if err != nil {
		return p, c, harness.Options{}, err
	}
	return p, c, harness.Options{Target: in.Target, Device: in.Device, Trials: in.Trials, Seed: in.Seed,
		Timeout: time.Duration(in.TimeoutS * float64(time.Second)), SkipTiming: in.SkipTiming, KernelPolicy: in.KernelPolicy, Retime: in.Retime}, nil
}

// runKernelDescription is run_kernel's description; the checks it counts
// are listed in full by the resource kevolve://checks.
func runKernelDescription(ev *harness.Evaluator) string {
	checks := "every check"
	if cs, err := registeredChecks(ev); err == nil {
		checks = fmt.Sprintf("all %d checks", len(cs))
	}
	return "Use to check a candidate kernel (Python defining ModelNew) against a PyTorch reference (a KernelBench file or a corpus name such as llm/rmsnorm) and time both, " +
		"in a fresh process on one device with a deadline (crashes and hangs become verdicts). " +
		"Returns verdict (" + strings.Join(problem.Verdicts, ", ") + "), the failing stage, " + checks + " by name with details, " +
		"median/p10/p90/CV of the candidate, the eager reference and torch.compile, speedup_vs_eager and speedup_vs_compile, " +
		"the speed-of-light bound on that device (t_sol_s, pct_of_sol, sol_score), fitness, memory peaks, notes, warnings and the trimmed log. " +
		"A timeout answers within timeout_s plus at most 10% (a build slowed by host load: up to 2x, noted) with stage_s and partial figures; a progress token gets each stage. " +
		"Calling the reference's own op, mutating inputs, caching outputs or timing below the speed of light is an integrity_violation. " +
		"Identical requests are answered from a cache unless retime. " +
		"Resource " + checksURI + " lists each check (name, stage, verdict, meaning) and the dtype tolerances."
}

// RunKernel returns the run_kernel tool: one candidate checked and timed
// against a reference in a fresh, isolated worker process. Its description
// counts the checks of the evaluator's registry; kevolve://checks lists them.
func RunKernel(ev *harness.Evaluator, resolve problem.Resolver) server.ServerTool {
	tool := mcp.NewTool("run_kernel",
		mcp.WithDescription(runKernelDescription(ev)),
		mcp.WithInputSchema[RunKernelInput](),
		outputSchema[harness.EvalResult](),
		mcp.WithTitleAnnotation("Check and time a kernel"),
		mcp.WithReadOnlyHintAnnotation(false), // writes build caches and the evaluation cache
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in RunKernelInput) (*mcp.CallToolResult, error) {
		if ev == nil {
			return toolErrorf("run_kernel is not available: no Python with torch was found (see device_info)"), nil
		}
		p, c, o, err := in.Request(ctx, resolve)
		if err != nil {
			return toolErr("run_kernel", err), nil
		}
		o.Progress = progressFor(ctx, req)
		res, err := ev.Evaluate(ctx, p, c, nil, o)
		if err != nil {
			return toolErr("run_kernel", err), nil
		}
		return structured(res), nil
	})}
}

// toolErr words a service error for the agent: its own mistakes by
// argument, a missing device as such, anything else as the tool's failure.
func toolErr(tool string, err error) *mcp.CallToolResult {
	var ie *problem.InputError
	var nd *lease.NoDeviceError
	switch {
	case errors.As(err, &ie):
		return toolErrorf("%s", ie.Error())
	case errors.As(err, &nd):
		return toolErrorf("%s: %s (device_info lists what this machine has)", tool, nd.Error())
	}
	return toolErrorf("%s: %v", tool, err)
}

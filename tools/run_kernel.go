package tools

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// RunKernelInput is run_kernel's arguments.
type RunKernelInput struct {
	Reference       string  `json:"reference,omitempty" jsonschema:"The problem: a path to a KernelBench-format Python file (Model, get_inputs, get_init_inputs) or a corpus problem name such as llm/rmsnorm. Give this or reference_source."`
	ReferenceSource string  `json:"reference_source,omitempty" jsonschema:"The problem as inline Python source (KernelBench format) instead of a path or name."`
	Candidate       string  `json:"candidate,omitempty" jsonschema:"Path to the candidate Python file defining ModelNew (same constructor and forward signature as Model). Give this or candidate_source."`
	CandidateSource string  `json:"candidate_source,omitempty" jsonschema:"The candidate as inline Python source defining ModelNew (at most 4 MiB). It may use from kevolve import load_cuda/load_hip/load_c (fast), Triton, or torch.utils.cpp_extension.load_inline."`
	Target          string  `json:"target,omitempty" jsonschema:"Where to run: nvidia, amd, cpu or auto (default: the best device found)."`
	Device          string  `json:"device,omitempty" jsonschema:"Which device of the target: an index (0, 1, ...) or a UUID as device_info lists them. Default: any free device."`
	TimeoutS        float64 `json:"timeout_s,omitempty" jsonschema:"Wall-clock limit for the whole evaluation in seconds (default 180). A kernel still running at the deadline is killed and gets verdict timeout."`
	Trials          int     `json:"trials,omitempty" jsonschema:"Correctness trials, each with fresh random inputs from a different seed (default 5)."`
	Seed            int64   `json:"seed,omitempty" jsonschema:"Base seed for weights and inputs (default 42)."`
	SkipTiming      bool    `json:"skip_timing,omitempty" jsonschema:"Only check correctness and integrity; no timing (faster)."`
	Retime          bool    `json:"retime,omitempty" jsonschema:"Measure again instead of answering from the cache of identical earlier requests (the fresh result replaces the cached one)."`
	Shapes          string  `json:"shapes,omitempty" jsonschema:"Shape set of a corpus problem: large (production-like, fills a GPU) or small (runs on a CPU in seconds). Default: large on a GPU, small on the CPU. KernelBench files have one shape and ignore it."`
	KernelPolicy    string  `json:"kernel_policy,omitempty" jsonschema:"default: a candidate whose own kernels run may call some of the reference's heavy ops through torch or a library (a cuBLAS GEMM beside a fused epilogue kernel), noted with their share of the time; strict: every heavy op must be in the candidate's own kernels."`
}

// Problem resolves the problem the arguments name.
func (in RunKernelInput) Problem(ctx context.Context, r problem.Resolver) (harness.Problem, error) {
	return problem.Resolve(ctx, problem.Ref{Reference: in.Reference, ReferenceSource: in.ReferenceSource, Shapes: in.Shapes}, r)
}

// Options are the evaluation options the arguments ask for.
func (in RunKernelInput) Options() harness.Options {
	return harness.Options{Target: in.Target, Device: in.Device, Trials: in.Trials, Seed: in.Seed,
		Timeout: time.Duration(in.TimeoutS * float64(time.Second)), SkipTiming: in.SkipTiming, KernelPolicy: in.KernelPolicy, Retime: in.Retime}
}

// runKernelProse is run_kernel's description before its list of checks,
// which the check registry writes (checksText).
const runKernelProse = "Check a candidate kernel (a Python file defining ModelNew) against a PyTorch reference (KernelBench format, or a corpus problem name) and time both. " +
	"Runs in a fresh forked process pinned to one device, with a deadline: crashes, hangs and illegal memory accesses become verdicts, never a dead server. " +
	"Result: verdict (pass, incorrect, compile_error, runtime_error, timeout, crash, integrity_violation, reference_error), correct, the failing stage, named checks with details (listed below); " +
	"reference_error means the reference itself failed to import, construct, make inputs or run, or is degenerate (the stage says which, the failed check's detail names its file:line); " +
	"memory gives the peak device memory of reference and candidate. " +
	"timing stats (median, p10, p90, CV, iterations) for the candidate, the eager reference and torch.compile of it, speedup_vs_eager, speedup_vs_compile, " +
	"the speed-of-light bound on the device it ran on (t_sol_s, pct_of_sol, sol_score; sol says how the work was counted and which ceilings; a candidate beating the reference algorithm's bound is judged on NVIDIA by its own work measured with Nsight Compute: consistent means pass with an algorithmic_shortcut note), notes, " +
	"fitness (speedups, 0 unless pass, and sol_score), which device ran it, warnings and the trimmed log. " +
	"Calling the reference's own torch op, mutating inputs, caching outputs, changing what the reference runs on or running faster than the speed of light is an integrity_violation; plain torch ops pass with a warning. " +
	"Identical requests are answered from a cache (cached: true, measured_at says when) unless retime is set. " +
	"Tolerances of allclose and relative_norm (atol/rtol/rel_norm), dtype-aware: fp32 1e-4/1e-4/1e-3, fp16 1e-2/1e-2/1e-2, bf16 2e-2/2e-2/2e-2, fp64 1e-7/1e-7/1e-6 unless the problem sets its own " +
	"(KernelBench today: allclose 1e-4 fp32, 1e-2 fp16/bf16; its v0/v0.1 used 1e-2 for fp32 too)."

// RunKernel returns the run_kernel tool: one candidate checked and timed
// against a reference in a fresh, isolated worker process. Its description
// lists the checks of the evaluator's registry.
func RunKernel(ev *harness.Evaluator, resolve problem.Resolver) server.ServerTool {
	tool := mcp.NewTool("run_kernel",
		mcp.WithDescription(runKernelProse+"\n\n"+checksText(ev)),
		mcp.WithInputSchema[RunKernelInput](),
		mcp.WithOutputSchema[harness.EvalResult](),
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
		p, err := in.Problem(ctx, resolve)
		if err != nil {
			return toolErr("run_kernel", err), nil
		}
		c, err := problem.ParseCandidate(in.Candidate, in.CandidateSource)
		if err != nil {
			return toolErr("run_kernel", err), nil
		}
		o := in.Options()
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

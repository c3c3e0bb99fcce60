package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
)

// RunKernelInput is run_kernel's arguments.
type RunKernelInput struct {
	Reference       string  `json:"reference,omitempty" jsonschema:"The problem: a path to a KernelBench-format Python file (Model, get_inputs, get_init_inputs) or a corpus problem name such as llm/rmsnorm. Give this or reference_source."`
	ReferenceSource string  `json:"reference_source,omitempty" jsonschema:"The problem as inline Python source (KernelBench format) instead of a path or name."`
	Candidate       string  `json:"candidate,omitempty" jsonschema:"Path to the candidate Python file defining ModelNew (same constructor and forward signature as Model). Give this or candidate_source."`
	CandidateSource string  `json:"candidate_source,omitempty" jsonschema:"The candidate as inline Python source defining ModelNew. It may use from kevolve import load_cuda/load_c (fast), Triton, or torch.utils.cpp_extension.load_inline."`
	Target          string  `json:"target,omitempty" jsonschema:"Where to run: nvidia, cpu or auto (default: the best device found)."`
	TimeoutS        float64 `json:"timeout_s,omitempty" jsonschema:"Wall-clock limit for the whole evaluation in seconds (default 180). A kernel still running at the deadline is killed and gets verdict timeout."`
	Trials          int     `json:"trials,omitempty" jsonschema:"Correctness trials, each with fresh random inputs from a different seed (default 5)."`
	Seed            int64   `json:"seed,omitempty" jsonschema:"Base seed for weights and inputs (default 42)."`
	SkipTiming      bool    `json:"skip_timing,omitempty" jsonschema:"Only check correctness and integrity; no timing (faster)."`
	Shapes          string  `json:"shapes,omitempty" jsonschema:"Shape set of a corpus problem: large (production-like, fills a GPU) or small (runs on a CPU in seconds). Default: large on a GPU, small on the CPU. KernelBench files have one shape and ignore it."`
}

// ResolvedReference is what a corpus problem name stands for: its reference
// file and what its metadata declares for the shape set asked for.
type ResolvedReference struct {
	Source    harness.Source
	Tolerance *harness.Tolerance
	// FLOPs and Bytes are declared counts (0 = not declared); Dtype the
	// problem's dtype for the shape set.
	FLOPs, Bytes float64
	Dtype        string
}

// ReferenceResolver turns a corpus problem name and shape set ("" = the
// default) into its reference; nil means only paths and inline sources are
// accepted.
type ReferenceResolver func(name, shapes string) (ResolvedReference, error)

// RunKernel returns the run_kernel tool: one candidate checked and timed
// against a reference in a fresh, isolated worker process.
func RunKernel(ev *harness.Evaluator, resolve ReferenceResolver) server.ServerTool {
	tool := mcp.NewTool("run_kernel",
		mcp.WithDescription("Check a candidate kernel (a Python file defining ModelNew) against a PyTorch reference (KernelBench format, or a corpus problem name) and time both. "+
			"Runs in a fresh forked process with a deadline: crashes, hangs and illegal memory accesses become verdicts, never a dead server. "+
			"Result: verdict (pass, incorrect, compile_error, runtime_error, timeout, crash, integrity_violation, reference_error), correct, the failing stage, named checks with details "+
			"(allclose with dtype-aware tolerances, relative_norm, finite, shape/dtype/device/contiguity, input_mutation, output_aliasing, reference_ops (the whole dispatched aten op trace), memoization, "+
			"audit (timed calls checked at random on refreshed inputs), threads, stream_work, timers, harness_patched, out_of_memory, faster_than_sol), "+
			"reference_error means the reference itself failed to import, construct, make inputs or run (stage reference_import|reference_init|reference_inputs|reference_forward, with its file:line); "+
			"memory gives the peak device memory of reference and candidate. "+
			"timing stats (median, p10, p90, CV, iterations) for the candidate, the eager reference and torch.compile of it, speedup_vs_eager, speedup_vs_compile, warnings and the trimmed log. "+
			"Calling the reference's own torch op, mutating inputs or caching outputs is an integrity_violation; plain torch ops pass with a warning. Identical requests are answered from a cache."),
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
		ereq, msg := RunKernelRequest(in, resolve)
		if msg != "" {
			return toolErrorf("%s", msg), nil
		}
		res, err := ev.Evaluate(ctx, ereq, progressFor(ctx, req))
		if err != nil {
			return toolErrorf("run_kernel: %v", err), nil
		}
		return structured(res), nil
	})}
}

// RunKernelRequest validates the arguments; a non-empty message says what
// the agent must change.
func RunKernelRequest(in RunKernelInput, resolve ReferenceResolver) (harness.EvalRequest, string) {
	var r harness.EvalRequest
	switch {
	case in.Reference != "" && in.ReferenceSource != "":
		return r, "give reference or reference_source, not both"
	case in.ReferenceSource != "":
		r.Reference = harness.Source{Code: in.ReferenceSource}
	case in.Reference != "":
		if st, err := os.Stat(in.Reference); err == nil && !st.IsDir() {
			r.Reference = harness.Source{Path: in.Reference}
		} else if resolve != nil && !strings.HasSuffix(in.Reference, ".py") {
			ref, rerr := resolve(in.Reference, in.Shapes)
			if rerr != nil {
				return r, fmt.Sprintf("reference %q is neither a file nor a known corpus problem: %v", in.Reference, rerr)
			}
			r.Reference, r.Tolerance = ref.Source, ref.Tolerance
		} else {
			return r, fmt.Sprintf("reference %q: no such file", in.Reference)
		}
	default:
		return r, "reference (a file path or corpus name) or reference_source is required"
	}
	switch {
	case in.Candidate != "" && in.CandidateSource != "":
		return r, "give candidate or candidate_source, not both"
	case in.CandidateSource != "":
		r.Candidate = harness.Source{Code: in.CandidateSource}
	case in.Candidate != "":
		if st, err := os.Stat(in.Candidate); err != nil || st.IsDir() {
			return r, fmt.Sprintf("candidate %q: no such file", in.Candidate)
		}
		r.Candidate = harness.Source{Path: in.Candidate}
	default:
		return r, "candidate (a file path) or candidate_source is required"
	}
	switch t := strings.ToLower(in.Target); t {
	case "", "auto", "cpu", "nvidia", "cuda":
		r.Target = t
	default:
		return r, fmt.Sprintf("target %q: use nvidia, cpu or auto", in.Target)
	}
	if in.TimeoutS < 0 || in.TimeoutS > 3600 {
		return r, "timeout_s must be between 0 and 3600"
	}
	if in.Trials < 0 || in.Trials > 100 {
		return r, "trials must be between 1 and 100"
	}
	r.Timeout = time.Duration(in.TimeoutS * float64(time.Second))
	r.Trials = in.Trials
	r.Seed = in.Seed
	r.SkipTiming = in.SkipTiming
	switch in.Shapes {
	case "", "large", "small":
		r.Shapes = in.Shapes
	default:
		return r, fmt.Sprintf("shapes %q: use large or small", in.Shapes)
	}
	return r, ""
}

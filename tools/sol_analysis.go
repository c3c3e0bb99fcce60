package tools

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// shapesOrLarge is the set a corpus name resolves to: "" is large.
func shapesOrLarge(s string) string {
	if s == "" {
		return "large"
	}
	return s
}

// SolAnalysisInput is sol_analysis's arguments.
type SolAnalysisInput struct {
	Reference  string  `json:"reference,omitempty" jsonschema:"Path to the problem's KernelBench-format reference (Model, get_inputs, get_init_inputs), or a corpus problem name such as llm/rmsnorm (its declared counts are used). A file's work is traced (matmul/conv/attention FLOPs exactly, elementwise by a stated per-op cost; bytes = each input and weight read once, each output written once) unless flops and bytes are both given."`
	Flops      float64 `json:"flops,omitempty" jsonschema:"Declared FLOPs of one forward; wins over the trace."`
	Bytes      float64 `json:"bytes,omitempty" jsonschema:"Declared minimum bytes moved by one forward; wins over the trace."`
	Dtype      string  `json:"dtype,omitempty" jsonschema:"Compute dtype that picks the FLOP ceiling (bf16, fp16, fp32, tf32, fp8); default: the dtype of the reference's heaviest matmul, else of its largest tensors."`
	Device     string  `json:"device,omitempty" jsonschema:"Datasheet key of the device to bound against (e.g. h100, h100-sxm, mi300x, a100-80gb); default: this machine's device, with measured ceilings where it was calibrated."`
	Shapes     string  `json:"shapes,omitempty" jsonschema:"Shape set passed to the reference as KEVOLVE_SHAPES (e.g. large, small)."`
	Candidate  string  `json:"candidate,omitempty" jsonschema:"Path to a candidate Python file defining ModelNew: it is checked and timed first (as run_kernel does, on target), and its measured median, the eager reference's and its correctness are used, on the shape set that was timed. Give this or candidate_s, not both."`
	Target     string  `json:"target,omitempty" jsonschema:"Where to evaluate candidate: nvidia, cpu or auto (default: the best device found)."`
	CandidateS float64 `json:"candidate_s,omitempty" jsonschema:"Measured median time of the candidate's forward in seconds (e.g. from run_kernel). Adds pct_of_sol, sol_score, headroom and faster_than_sol."`
	ReferenceS float64 `json:"reference_s,omitempty" jsonschema:"Measured median time of the eager reference in seconds: T_b in sol_score = 1/(1 + (T_k - T_sol)/(T_b - T_sol))."`
	Correct    *bool   `json:"correct,omitempty" jsonschema:"Whether the candidate passed correctness (default true); false makes sol_score 0."`
	TimeoutS   float64 `json:"timeout_s,omitempty" jsonschema:"Limit for tracing the reference in seconds (default 120)."`
}

// CeilingsProvider returns the ceilings for a device key ("" = the detected
// device, measured figures over the datasheet).
type CeilingsProvider func(ctx context.Context, deviceKey string) (sol.Ceilings, error)

// SolAnalysis returns the sol_analysis tool: the speed-of-light bound of a
// problem on a device and, given a candidate time, how close it comes.
// ev evaluates a candidate file when one is given (nil: candidate is refused).
func SolAnalysis(ceilings CeilingsProvider, trace sol.TraceOptions, resolve problem.Resolver, ev *harness.Evaluator) server.ServerTool {
	tool := mcp.NewTool("sol_analysis",
		mcp.WithDescription("Speed-of-light (roofline) bound of a problem on a device: FLOPs and the fewest bytes that must move (declared, or traced from the reference), "+
			"arithmetic_intensity, t_compute_s and t_memory_s under the device's ceilings (measured by `kevolve-mcp calibrate` where available, else the datasheet), which bounds, and t_sol_s. "+
			"Given candidate (a ModelNew file, checked and timed first) or candidate_s (and reference_s) it adds pct_of_sol, sol_score (0.5 at the eager reference, 1 at SOL, 0 if incorrect), headroom (candidate/t_sol) and "+
			"faster_than_sol (candidate more than 10% under the bound: wrong counts or a result that skips work). detail says how each count was derived. "+
			"Use it to decide whether a kernel is worth more effort: at 90% of SOL there is little left; at 20% look for the bottleneck with profile_kernel."),
		mcp.WithInputSchema[SolAnalysisInput](),
		mcp.WithOutputSchema[sol.Report](),
		mcp.WithTitleAnnotation("Speed-of-light analysis"),
		mcp.WithReadOnlyHintAnnotation(false), // with candidate it runs that code and writes the build and evaluation caches, as run_kernel
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in SolAnalysisInput) (*mcp.CallToolResult, error) {
		if in.Candidate != "" {
			var msg string
			if in, msg = measureCandidate(ctx, in, ev, resolve, progressFor(ctx, req)); msg != "" {
				return toolErrorf("%s", msg), nil
			}
		}
		r, msg := SolRequest(ctx, in, trace, resolve)
		if msg != "" {
			return toolErrorf("%s", msg), nil
		}
		if ceilings == nil {
			return toolErrorf("sol_analysis is not available: no ceilings provider is configured"), nil
		}
		ceil, err := ceilings(ctx, in.Device)
		if err != nil {
			return toolErrorf("sol_analysis: ceilings: %v (pass device, e.g. \"h100\", or run `kevolve-mcp calibrate`)", err), nil
		}
		rep, err := sol.AnalyzeRequest(ctx, r, ceil)
		if err != nil {
			return toolErrorf("sol_analysis: %v", err), nil
		}
		return structured(rep), nil
	})}
}

// measureCandidate evaluates in.Candidate as run_kernel would and puts what
// was measured into in: the shape set that was timed (a CPU run defaults to
// the small one, so the bound must count that), the candidate's and the
// eager reference's medians, and correctness.
func measureCandidate(ctx context.Context, in SolAnalysisInput, ev *harness.Evaluator, resolve problem.Resolver, progress Progress) (SolAnalysisInput, string) {
	switch {
	case in.CandidateS > 0 || in.ReferenceS > 0 || in.Correct != nil:
		return in, "give candidate (a file to evaluate) or measured candidate_s/reference_s/correct, not both"
	case in.Reference == "":
		return in, "candidate needs reference: the problem it is evaluated against (a file or a corpus name)"
	case ev == nil:
		return in, "candidate cannot be evaluated here: no Python with torch was found (see device_info); pass candidate_s instead"
	}
	rk := RunKernelInput{Reference: in.Reference, Candidate: in.Candidate, Target: in.Target, Shapes: in.Shapes}
	p, err := rk.Problem(ctx, resolve)
	if err != nil {
		return in, err.Error()
	}
	c, err := problem.ParseCandidate(rk.Candidate, "")
	if err != nil {
		return in, err.Error()
	}
	o := rk.Options()
	o.Progress = progress
	res, err := ev.Evaluate(ctx, p, c, nil, o)
	if err != nil {
		return in, fmt.Sprintf("sol_analysis: evaluating candidate: %v", err)
	}
	m, ok := res.Measured()
	if !ok {
		return in, fmt.Sprintf("candidate %q was not timed (verdict %s): run_kernel on it says why", in.Candidate, res.Verdict)
	}
	in.Candidate = ""
	in.Shapes = m.Shapes
	in.CandidateS, in.ReferenceS = m.CandidateS, m.ReferenceS
	in.Correct = &m.Correct
	return in, ""
}

// SolRequest validates the arguments; a non-empty message says what to change.
func SolRequest(ctx context.Context, in SolAnalysisInput, trace sol.TraceOptions, resolve problem.Resolver) (sol.Request, string) {
	for name, v := range map[string]float64{"flops": in.Flops, "bytes": in.Bytes, "candidate_s": in.CandidateS, "reference_s": in.ReferenceS, "timeout_s": in.TimeoutS} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return sol.Request{}, fmt.Sprintf("%s must be a finite number >= 0", name)
		}
	}
	if in.Candidate != "" {
		return sol.Request{}, "candidate must be evaluated first (the sol_analysis tool and `kevolve-mcp sol --candidate` do); pass candidate_s here"
	}
	if in.Reference == "" && (in.Flops == 0 || in.Bytes == 0) {
		return sol.Request{}, "give reference (a file to trace) or both flops and bytes"
	}
	if in.Reference != "" {
		p, err := problem.Resolve(ctx, problem.Ref{Reference: in.Reference, Shapes: in.Shapes}, resolve)
		if err != nil {
			return sol.Request{}, err.Error()
		}
		if p.Name != "" {
			// Declared counts of the set asked for win over tracing; what
			// the caller gave wins over both.
			in.Reference = p.Reference.Path
			if in.Flops == 0 && in.Bytes == 0 && p.Work.Shapes == shapesOrLarge(in.Shapes) {
				in.Flops, in.Bytes = p.Work.FLOPs, p.Work.Bytes
			}
			if in.Dtype == "" {
				in.Dtype = p.Work.Dtype
			}
		}
	}
	if in.TimeoutS > 3600 {
		return sol.Request{}, "timeout_s must be at most 3600"
	}
	trace.Shapes = in.Shapes
	if in.TimeoutS > 0 {
		trace.Timeout = time.Duration(in.TimeoutS * float64(time.Second))
	}
	correct := in.Correct == nil || *in.Correct
	return sol.Request{Reference: in.Reference, FLOPs: in.Flops, Bytes: in.Bytes, Dtype: in.Dtype,
		CandidateS: in.CandidateS, ReferenceS: in.ReferenceS, Correct: correct, Trace: trace}, ""
}

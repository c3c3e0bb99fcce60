package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
)

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
type CeilingsProvider = harness.CeilingsFunc

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
		q := in.query()
		q.Progress = progressFor(ctx, req)
		rep, err := harness.SOLAnalysis(ctx, q, harness.SOLDeps{Evaluator: ev, Resolve: resolve, Ceilings: ceilings, Trace: trace})
		if err != nil {
			return toolErr("sol_analysis", err), nil
		}
		return structured(rep), nil
	})}
}

// query is the question the arguments ask.
func (in SolAnalysisInput) query() harness.SOLQuery {
	return harness.SOLQuery{Reference: in.Reference, FLOPs: in.Flops, Bytes: in.Bytes, Dtype: in.Dtype, Device: in.Device,
		Shapes: in.Shapes, Candidate: in.Candidate, Target: in.Target, CandidateS: in.CandidateS, ReferenceS: in.ReferenceS,
		Correct: in.Correct, TimeoutS: in.TimeoutS}
}

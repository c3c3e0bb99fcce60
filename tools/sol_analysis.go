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
	Reference  string  `json:"reference,omitempty" jsonschema:"A KernelBench-format reference file (its work is traced unless flops and bytes are both given) or a corpus name such as llm/rmsnorm (declared counts)."`
	Flops      float64 `json:"flops,omitempty" jsonschema:"Declared FLOPs of one forward; wins over the trace."`
	Bytes      float64 `json:"bytes,omitempty" jsonschema:"Declared minimum bytes moved by one forward; wins over the trace."`
	Dtype      string  `json:"dtype,omitempty" jsonschema:"Dtype of the FLOP ceiling (bf16, fp16, fp32, tf32, fp8); default: the heaviest matmul's, else the largest tensors'."`
	Device     string  `json:"device,omitempty" jsonschema:"Datasheet key (h100, h100-sxm, mi300x, a100-80gb...); default: this machine's, with measured ceilings where calibrated."`
	Shapes     string  `json:"shapes,omitempty" jsonschema:"Shape set (KEVOLVE_SHAPES), e.g. large or small."`
	Candidate  string  `json:"candidate,omitempty" jsonschema:"A ModelNew file, checked and timed first as run_kernel does; or give candidate_s."`
	Target     string  `json:"target,omitempty" jsonschema:"Where to time candidate: nvidia, cpu or auto."`
	CandidateS float64 `json:"candidate_s,omitempty" jsonschema:"The candidate's measured median in seconds (e.g. from run_kernel)."`
	ReferenceS float64 `json:"reference_s,omitempty" jsonschema:"The eager reference's median in seconds (T_b in sol_score)."`
	Correct    *bool   `json:"correct,omitempty" jsonschema:"Whether the candidate passed (default true); false makes sol_score 0."`
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
		mcp.WithDescription("Use before optimizing, to know the floor: the speed-of-light (roofline) bound of a problem on a device. Returns FLOPs and the fewest bytes "+
			"that must move (declared or traced), arithmetic_intensity, t_compute_s and t_memory_s under the device's ceilings "+
			"(calibrated, else the datasheet; an uncalibrated CPU is calibrated first: calibration says so), the bound and t_sol_s. With candidate (checked and timed first) or candidate_s it adds pct_of_sol, "+
			"sol_score (0.5 at the eager reference, 1 at SOL), headroom and faster_than_sol (over 10% under the bound: wrong counts or skipped work). "+
			"detail says how each was counted. At 90% of SOL little is left; at 20%, profile_kernel finds why."),
		mcp.WithInputSchema[SolAnalysisInput](),
		outputSchema[sol.Report](),
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

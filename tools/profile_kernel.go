package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/profile"
)

// ProfileKernelInput is profile_kernel's arguments.
type ProfileKernelInput struct {
	Reference string  `json:"reference" jsonschema:"A KernelBench-format reference file or a corpus name such as llm/rmsnorm (in mode model, the model to rank)."`
	Candidate string  `json:"candidate,omitempty" jsonschema:"Path to the candidate defining ModelNew (required in mode kernel)."`
	Mode      string  `json:"mode,omitempty" jsonschema:"kernel (default): profile and diagnose the candidate's kernels; model: rank the reference's operators by time share."`
	Backend   string  `json:"backend,omitempty" jsonschema:"auto (default: ncu on NVIDIA, rocprofv3 on AMD, torch.profiler and perf on the CPU), ncu, rocprof or cpu."`
	Shapes    string  `json:"shapes,omitempty" jsonschema:"Shape set (KEVOLVE_SHAPES), e.g. large or small."`
	Device    string  `json:"device,omitempty" jsonschema:"A GPU index or UUID from device_info (default: any free one; the profile holds it alone)."`
	TimeoutS  float64 `json:"timeout_s,omitempty" jsonschema:"Limit in seconds (default 120); Nsight Compute replays each kernel ~40 times."`
}

// ProfileKernel returns the profile_kernel tool. ev (may be nil) leases the
// device: a profile holds its device alone, since counters taken while
// another kernel runs would be meaningless, and so would that kernel's
// timing. resolve (may be nil) takes corpus names.
func ProfileKernel(opt profile.Options, ev *harness.Evaluator, resolve problem.Resolver) server.ServerTool {
	tool := mcp.NewTool("profile_kernel",
		mcp.WithDescription("Use on a passing candidate to learn why it is slow. Mode kernel profiles its forward under Nsight Compute or rocprofv3 (only its kernels, "+
			"after warm-up, clocks untouched) and returns per kernel: duration, SM and DRAM throughput, L1/L2 hit rates, occupancy and its limiter, "+
			"registers, spills, top stall reasons, tensor-pipe use and sector efficiency; then findings (memory-bound, latency-bound, occupancy-limited, "+
			"uncoalesced, ...) with the figures behind them and topics for search_knowledge. On a CPU: torch.profiler and perf counters. Mode model ranks "+
			"the reference's operators by time share and Amdahl headroom. available=false with missing: no profiler could run here. Takes ~10-30 s."),
		mcp.WithInputSchema[ProfileKernelInput](),
		outputSchema[profile.Report](),
		mcp.WithTitleAnnotation("Profile a kernel"),
		mcp.WithReadOnlyHintAnnotation(false), // runs the candidate's code and writes scratch reports (removed after)
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, in ProfileKernelInput) (*mcp.CallToolResult, error) {
		p, c, o, err := in.Request(ctx, resolve)
		if err != nil {
			return toolErr("profile_kernel", err), nil
		}
		o.Base = opt
		o.Progress = progressFor(ctx, req) // one reporter, so progress keeps increasing
		rep, err := harness.Profile(ctx, ev, p, c, o)
		if err != nil {
			return toolErr("profile_kernel", err), nil
		}
		return structured(rep), nil
	})}
}

// Request resolves the arguments into the profile service's terms.
func (in ProfileKernelInput) Request(ctx context.Context, resolve problem.Resolver) (harness.Problem, harness.Candidate, harness.ProfileOptions, error) {
	p, err := problem.Resolve(ctx, problem.Ref{Reference: in.Reference, Shapes: in.Shapes}, resolve)
	if err != nil {
		return p, harness.Candidate{}, harness.ProfileOptions{}, err
	}
	var c harness.Candidate
	if in.Candidate != "" {
		if c, err = problem.ParseCandidate(in.Candidate, ""); err != nil {
			return p, c, harness.ProfileOptions{}, err
		}
	}
	return p, c, harness.ProfileOptions{Mode: in.Mode, Backend: in.Backend, Device: in.Device,
		Timeout: time.Duration(in.TimeoutS * float64(time.Second))}, nil
}

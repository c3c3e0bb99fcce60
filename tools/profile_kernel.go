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
	Reference string  `json:"reference" jsonschema:"The KernelBench-format reference (Model, get_inputs, get_init_inputs): a file path or a corpus problem name such as llm/rmsnorm. In mode model this is the model whose operators are ranked."`
	Candidate string  `json:"candidate,omitempty" jsonschema:"Path to the candidate file defining ModelNew (mode kernel; required there)."`
	Mode      string  `json:"mode,omitempty" jsonschema:"kernel (default): profile the candidate's kernels and diagnose them; model: rank the reference model's operators by device-time share with Amdahl headroom, to pick which kernel to write first."`
	Backend   string  `json:"backend,omitempty" jsonschema:"auto (default: ncu on NVIDIA, rocprofv3 on AMD, torch.profiler and perf on the CPU), ncu, rocprof or cpu."`
	Shapes    string  `json:"shapes,omitempty" jsonschema:"Shape set passed to the reference as KEVOLVE_SHAPES (e.g. large, small)."`
	Device    string  `json:"device,omitempty" jsonschema:"Which GPU to profile on: an index or UUID as device_info lists them. Default: any free one. The profile holds it alone."`
	TimeoutS  float64 `json:"timeout_s,omitempty" jsonschema:"Wall-clock limit in seconds (default 120). Nsight Compute replays each kernel ~40 times: a candidate with many kernels takes longer."`
}

// ProfileKernel returns the profile_kernel tool. ev (may be nil) leases the
// device: a profile holds its device alone, since counters taken while
// another kernel runs would be meaningless, and so would that kernel's
// timing. resolve (may be nil) takes corpus names.
func ProfileKernel(opt profile.Options, ev *harness.Evaluator, resolve problem.Resolver) server.ServerTool {
	tool := mcp.NewTool("profile_kernel",
		mcp.WithDescription("Explain why a kernel is slow. Mode kernel runs the candidate's forward once under Nsight Compute (clocks untouched; only the candidate's kernels, after warm-up) "+
			"or rocprofv3, and returns per kernel: duration, SM and DRAM throughput % of peak, L1/L2 hit rates, achieved vs theoretical occupancy and its limiter, registers per thread, "+
			"spills, top warp stall reasons, tensor-pipe use and global load/store sector efficiency; then findings in the knowledge base's vocabulary (memory-bound, compute-bound, "+
			"latency-bound, occupancy-limited, register-pressure, uncoalesced, launch-bound, ...), each with the figures that show it and topics to pass to search_knowledge. "+
			"On a CPU it gives a torch.profiler breakdown and perf counters where perf can read them. Mode model ranks the reference's operators by time share and Amdahl headroom. "+
			"available=false with missing set means no profiler could run here. Takes ~10-30 s per candidate on an H100."),
		mcp.WithInputSchema[ProfileKernelInput](),
		mcp.WithOutputSchema[profile.Report](),
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

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newProfileCmd) }

func newProfileCmd(c *cli) *cobra.Command {
	var in tools.ProfileKernelInput
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "profile --ref FILE --candidate FILE [--mode kernel|model]",
		Short: "Profile a candidate (Nsight Compute, rocprofv3 or CPU) with a diagnosis",
		Long: `Profile with the device's profiler and diagnose what bounds the code.
Mode kernel profiles the candidate's kernels; mode model ranks the
reference's operators, to say which one is worth a kernel.`,
		Example: `  kevolve-mcp profile --ref my_ref.py --candidate my_kernel.py
  kevolve-mcp profile --ref my_ref.py --mode model --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := c.host()
			defer a.Close()
			ctx, cancel := signalContext()
			defer cancel()
			p, cand, o, err := in.Request(ctx, a.Resolver())
			if err != nil {
				return err
			}
			o.Base = profile.Options{Python: a.Python()}
			ev, _ := a.Evaluator() // nil without Python: the report says what is missing
			fmt.Fprintln(cmd.ErrOrStderr(), profilingNote(in.Backend, gpuDevicePresent()))
			rep, err := harness.Profile(ctx, ev, p, cand, o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			return profile.WriteTable(cmd.OutOrStdout(), rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.Reference, "ref", "", "reference: a KernelBench-format `file` or a corpus problem name")
	f.StringVar(&in.Device, "device", "", "which GPU to hold: an index or UUID (default: any free one)")
	f.StringVar(&in.Candidate, "candidate", "", "candidate `file` defining ModelNew")
	f.StringVar(&in.Mode, "mode", "kernel", "kernel (profile the candidate) or model (rank the reference's operators)")
	f.StringVar(&in.Backend, "backend", "auto", "auto, ncu, rocprof or cpu")
	f.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem")
	f.Float64Var(&in.TimeoutS, "timeout", 0, "limit in `seconds` (default 120)")
	f.BoolVar(&asJSON, "json", false, "print the structured result the profile_kernel tool returns")
	_ = cmd.RegisterFlagCompletionFunc("ref", completeReference)
	_ = cmd.MarkFlagFilename("candidate", "py")
	_ = cmd.RegisterFlagCompletionFunc("mode", fixedCompletion("kernel", "model"))
	_ = cmd.RegisterFlagCompletionFunc("backend", fixedCompletion("auto", "ncu", "rocprof", "cpu"))
	_ = cmd.RegisterFlagCompletionFunc("shapes", fixedCompletion("large", "small"))
	return cmd
}

// profilingNote says what the profile is about to do: a CPU profile
// (torch.profiler, perf) takes seconds and has nothing to do with Nsight.
func profilingNote(backend string, gpu bool) string {
	if backend == "cpu" || ((backend == "" || backend == "auto") && !gpu) {
		return "profiling on the CPU (torch.profiler, and perf where allowed)..."
	}
	return "profiling (Nsight Compute or rocprofv3 replays each kernel: 10-30 s)..."
}

// gpuDevicePresent is whether the profiler's auto backend may pick a GPU
// profiler (the device files harness/profile looks for).
func gpuDevicePresent() bool {
	for _, f := range []string{"/dev/nvidiactl", "/dev/kfd"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

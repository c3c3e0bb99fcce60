package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newEvalCmd) }

// kernelPolicyUsage documents --kernel-policy (eval, kernelbench run, evolve).
const kernelPolicyUsage = "reference_ops policy: default (library calls beside the candidate's own kernels pass with a note; a plain-torch rewrite passes, noted no_own_kernel), kernelbench (KernelBench's rule: no kernel of its own is integrity_violation) or strict (every heavy op in its own kernels)"

// The job commands build the very requests the MCP tools build (through the
// tools package's validators), so the CLI and an agent see the same checks.

func newEvalCmd(c *cli) *cobra.Command {
	var in tools.RunKernelInput
	var asJSON, verbose bool
	cmd := &cobra.Command{
		Use:   "eval --ref FILE|PROBLEM --candidate FILE",
		Short: "Check and time one candidate against a reference",
		Long: `Check one candidate (a Python file defining ModelNew) against a reference
(a KernelBench-format file or a bundled problem name) on fresh random inputs,
then time both. The verdict, timings and speedups are what run_kernel returns.

Exit status: 0 when the verdict is pass, 1 for any other verdict (incorrect,
compile_error, runtime_error, timeout, crash, integrity_violation,
reference_error), 2 when the evaluation could not run at all. The table
shortens long check details and logs to one line; --verbose prints them whole
(tracebacks, out-of-memory messages).`,
		Example: `  kevolve-mcp eval --ref llm/rmsnorm --candidate my_kernel.py
  kevolve-mcp eval --ref my_ref.py --candidate my_kernel.py --target cpu --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := c.host()
			defer a.Close()
			ctx, cancel := signalContext()
			defer cancel()
			res, err := evaluate(ctx, a, in, stageProgress(cmd.ErrOrStderr()))
			if err != nil {
				return &exitStatus{2, err}
			}
			if asJSON {
				err = printJSON(cmd.OutOrStdout(), res)
			} else {
				err = harness.WriteTableOpts(cmd.OutOrStdout(), &res, harness.TableOptions{Full: verbose})
			}
			if err != nil {
				return err
			}
			return verdictStatus(res.Verdict, res.Stage)
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.Reference, "ref", "", "reference: a KernelBench-format `file` or a corpus problem name (e.g. llm/rmsnorm)")
	f.StringVar(&in.Candidate, "candidate", "", "candidate `file` defining ModelNew")
	f.StringVar(&in.Target, "target", "auto", "where to run: cpu, nvidia, amd or auto")
	f.StringVar(&in.Device, "device", "", "which device of the target: an index or UUID (default: any free one)")
	f.Float64Var(&in.TimeoutS, "timeout", 0, "wall-clock limit in `seconds` (default 180)")
	f.IntVar(&in.Trials, "trials", 0, "correctness trials (default 5)")
	f.Int64Var(&in.Seed, "seed", 0, "base seed (default 42)")
	f.BoolVar(&in.SkipTiming, "skip-timing", false, "check correctness only")
	f.BoolVar(&in.Retime, "retime", false, "measure again instead of answering from the cache of identical earlier evaluations")
	f.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem: large or small")
	f.StringVar(&in.KernelPolicy, "kernel-policy", "default", kernelPolicyUsage)
	f.BoolVar(&asJSON, "json", false, "print the structured result the run_kernel tool returns")
	f.BoolVarP(&verbose, "verbose", "v", false, "print every check detail, note and the log whole, not shortened to a line")
	_ = cmd.RegisterFlagCompletionFunc("ref", completeReference)
	_ = cmd.MarkFlagFilename("candidate", "py")
	_ = cmd.RegisterFlagCompletionFunc("target", fixedCompletion("auto", "cpu", "nvidia", "amd"))
	_ = cmd.RegisterFlagCompletionFunc("shapes", fixedCompletion("large", "small"))
	_ = cmd.RegisterFlagCompletionFunc("kernel-policy", fixedCompletion(harness.KernelPolicyDefault, harness.KernelPolicyKernelBench, harness.KernelPolicyStrict))
	return cmd
}

// verdictStatus is eval's exit: nil for a pass, status 1 naming the verdict
// otherwise, so a script can test `kevolve-mcp eval ... && deploy`.
func verdictStatus(verdict, stage string) error {
	if verdict == harness.VerdictPass {
		return nil
	}
	if stage != "" {
		verdict += " at " + stage
	}
	return &exitStatus{1, fmt.Errorf("verdict %s", verdict)}
}

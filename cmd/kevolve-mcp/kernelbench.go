package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/kernelbench"
)

func init() { register(newKernelBenchCmd) }

// newKernelBenchCmd is `kevolve-mcp kernelbench run`: flag parsing and a
// call into harness/kernelbench, nothing else.
func newKernelBenchCmd(c *cli) *cobra.Command {
	kb := &cobra.Command{
		Use:   "kernelbench",
		Short: "Run KernelBench sweeps: fast_p, geomean speedup and verdict counts",
		Args:  cobra.NoArgs,
	}
	requireSubcommand(kb)
	kb.AddCommand(newKernelBenchRunCmd(c))
	return kb
}

func newKernelBenchRunCmd(c *cli) *cobra.Command {
	var (
		opt          kernelbench.Options
		levels, only string
		summary      string
		timeoutS     float64
		asJSON       bool
		kernelPolicy string
	)
	cmd := &cobra.Command{
		Use:   "run --kb DIR --level 1[,2,3] (--candidates DIR|PATTERN | --reference-as-candidate)",
		Short: "Evaluate candidates for every KernelBench problem of some levels and report fast_p",
		Long: `Evaluate every problem of the chosen KernelBench levels (KernelBench/level{N}/{id}_{name}.py)
that has a candidate, then print KernelBench's metrics: fast_0 (correct), fast_1, fast_1.5
and fast_2 over eager and over torch.compile (over all pairs; a tool error counts as not
fast), the geometric mean speedup over the correct pairs, the count of each verdict, and
every tool error (a pair the harness could not judge) by name.

Candidates are a folder holding level{N}/{id}_{name}.py, or a quoted glob whose matches
name their problem by a level{N} path component followed by one starting {id}_.
--reference-as-candidate uses each problem itself, renamed Model→ModelNew, as its
candidate: every one must come back integrity_violation.

Results go to --jsonl and to the database's kernelbench_results table; the same command
run again skips pairs already judged by the same harness version (--rerun: evaluate
them again). Here --kb is the KernelBench checkout, not a knowledge folder.

Exit status: 0 when every pair was judged, whatever the verdicts (incorrect
kernels are results, not failures); 1 when the harness could not judge a pair
(a tool error) or the sweep stopped; with --reference-as-candidate, also 1
when any judged pair was not caught (a verdict other than integrity_violation).
Tool errors are shortened to a line; --verbose prints them whole.`,
		Example: `  kevolve-mcp kernelbench run --kb ~/KernelBench --level 1,2 --candidates my_kernels/
  kevolve-mcp kernelbench run --kb ~/KernelBench --level 1 --candidates 'out/level*/*/fast_cuda.py' --json
  kevolve-mcp kernelbench run --kb ~/KernelBench --level 1,2,3 --reference-as-candidate`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q (quote a glob pattern given to --candidates)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := harness.CheckKernelPolicy(kernelPolicy); err != nil {
				return err
			}
			if opt.KB == "" {
				return errors.New("kernelbench run: --kb DIR is required (a KernelBench checkout)")
			}
			if opt.ReferenceAsCandidate == (opt.Candidates != "") {
				return errors.New("kernelbench run: give either --candidates DIR|PATTERN or --reference-as-candidate")
			}
			if opt.ToleranceRule != harness.ToleranceDefault && opt.ToleranceRule != harness.ToleranceKernelBenchV0 {
				return fmt.Errorf("kernelbench run: --tolerance must be %s or %s", harness.ToleranceDefault, harness.ToleranceKernelBenchV0)
			}
			if timeoutS < 0 || opt.Jobs < 0 {
				return errors.New("kernelbench run: --timeout must be positive and --jobs 0 (one per core on a GPU) or more")
			}
			var err error
			if opt.Levels, err = kernelbench.ParseLevels(levels); err != nil {
				return fmt.Errorf("kernelbench run: --level: %w", err)
			}
			if only != "" {
				if opt.Only, err = regexp.Compile(only); err != nil {
					return fmt.Errorf("kernelbench run: --only: %w", err)
				}
			}
			opt.Timeout = time.Duration(timeoutS * float64(time.Second))
			opt.Log = cmd.ErrOrStderr()

			a := c.host()
			defer a.Close()
			if opt.Jobs == 0 {
				opt.Jobs = kernelbench.DefaultJobs(opt.Target, a.LocalGPUs, runtime.NumCPU())
			}
			ev, err := a.Evaluator()
			if err != nil {
				return err
			}
			if err := a.OpenDB(); err != nil {
				c.logger.Warn("kernelbench: no database, results are not kept for resuming", "err", err)
			} else {
				opt.DB = a.DB()
			}
			ctx, cancel := signalContext()
			defer cancel()
			busy0, t0 := ev.DeviceBusy(), time.Now()
			sum, runErr := kernelbench.Run(ctx, kernelbench.HarnessEvaluator{Ev: ev, KernelPolicy: kernelPolicy}, opt)
			if sum == nil {
				return runErr
			}
			share, held := harness.DeviceShare(busy0, ev.DeviceBusy(), time.Since(t0))
			sum.DeviceBusyShare, sum.DeviceHeldS = share, held.Seconds()
			// The worker processes' peak memory is known once they have exited.
			ev.Close()
			sum.Memory = kernelbench.MeasureMemory()
			if summary != "" {
				b, err := json.MarshalIndent(sum, "", "  ")
				if err == nil {
					err = os.WriteFile(summary, append(b, '\n'), 0o644)
				}
				if err != nil {
					return fmt.Errorf("kernelbench run: write summary: %w", err)
				}
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), sum); err != nil {
					return err
				}
			} else {
				sum.WriteTextFull(cmd.OutOrStdout(), opt.Verbose)
			}
			if runErr != nil {
				return runErr
			}
			if n := len(sum.ToolErrors); n > 0 {
				return fmt.Errorf("kernelbench run: %d tool error(s): the harness could not judge those pairs (listed above)", n)
			}
			if n := sum.Uncaught(); n > 0 {
				return fmt.Errorf("kernelbench run: %d of %d reference-as-candidate pairs not caught: the reference passed as a candidate (see the verdicts above)",
					n, sum.Metrics.Pairs-sum.Metrics.ToolErrors)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.KB, "kb", "", "KernelBench checkout `dir` (holding KernelBench/level{N}/{id}_{name}.py)")
	f.StringVar(&levels, "level", "1", "`levels` to sweep: 1, 2, 3 or a list such as 1,2,3")
	f.StringVar(&opt.Candidates, "candidates", "", "candidates: a `dir` of level{N}/{id}_{name}.py files, or a quoted glob such as 'out/level*/*/fast_cuda.py'")
	f.BoolVar(&opt.ReferenceAsCandidate, "reference-as-candidate", false, "use each problem itself, renamed Model→ModelNew, as its candidate (each must be caught)")
	f.StringVar(&opt.Target, "target", "auto", "where to run: cpu, nvidia or auto")
	f.Float64Var(&timeoutS, "timeout", 0, "wall-clock limit per evaluation in `seconds` (default 180)")
	f.StringVar(&opt.ToleranceRule, "tolerance", harness.ToleranceDefault, "also judge each pair under `rule` kernelbench-v0 (atol=rtol=1e-2 for every dtype, as KernelBench v0/v0.1, CUDA-L1 and the leaderboard reported), or default (the harness's own only)")
	f.IntVar(&opt.Jobs, "jobs", 0, "evaluations in flight at once; the device is still timed one at a time (0: one per core where the host has a GPU, so builds run on every core while the device times; 1 on the CPU)")
	f.StringVar(&opt.JSONL, "jsonl", "kernelbench-results.jsonl", "`file` to write, one JSON record per pair")
	f.StringVar(&summary, "summary", "", "also write the summary (wall time, peak memory) as JSON to this `file`")
	f.StringVar(&only, "only", "", "sweep only problems whose name (level1/12_...) matches this `regexp`")
	f.BoolVar(&opt.Rerun, "rerun", false, "evaluate again pairs already in the database for this harness version")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON instead of a table")
	// KernelBench's own rule by default: a sweep's fast_p means kernels of
	// the candidate's own, as KernelBench's checker wants.
	f.StringVar(&kernelPolicy, "kernel-policy", kernelbench.DefaultKernelPolicy, kernelPolicyUsage)
	_ = cmd.RegisterFlagCompletionFunc("kernel-policy", fixedCompletion(harness.KernelPolicyKernelBench, harness.KernelPolicyDefault, harness.KernelPolicyStrict))
	f.BoolVarP(&opt.Verbose, "verbose", "v", false, "print tool errors whole (tracebacks, out-of-memory messages), not shortened to a line")
	_ = cmd.MarkFlagDirname("kb")
	_ = cmd.RegisterFlagCompletionFunc("level", fixedCompletion("1", "2", "3", "1,2", "1,2,3"))
	_ = cmd.RegisterFlagCompletionFunc("target", fixedCompletion("auto", "cpu", "nvidia"))
	_ = cmd.RegisterFlagCompletionFunc("tolerance", fixedCompletion(harness.ToleranceDefault, harness.ToleranceKernelBenchV0))
	_ = cmd.MarkFlagFilename("jsonl", "jsonl")
	return cmd
}

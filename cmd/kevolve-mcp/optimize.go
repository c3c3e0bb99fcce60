package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

func init() { register(newOptimizeCmd) }

// optimizeOptions are `optimize`'s flags.
type optimizeOptions struct {
	req       runs.OptimizeRequest // the model, target, language, operator, time, export, report
	ops       operatorFlags
	budget    int
	chunk     int
	policy    string
	parallel  int
	evalTO    time.Duration
	asJSON    bool
	calibrate bool
	compile   bool       // --compile-baseline (the request's only when given)
	fleet     fleetFlags // --workers: the searches' evaluations on a fleet
}

// newOptimizeCmd wires `kevolve-mcp optimize` to search/runs, which runs
// search/optimize's flow.
func newOptimizeCmd(c *cli) *cobra.Command {
	var oo optimizeOptions
	cmd := &cobra.Command{
		Use:   "optimize --model FILE [--target] [--operator] [--budget N] [--time D] [--export DIR] [--json]",
		Short: "Model in, faster model out: profile, extract, evolve, deploy and verify a whole model",
		Long: `Profile a KernelBench-format model (Model, get_inputs, get_init_inputs) on the
target, rank its operators by the time the whole model would save at their speed of
light (beside Amdahl's bound), extract the hot regions (a normalization, an
activation chain, a GEMM with its epilogue) as problems with the model's shapes,
dtypes and weights, search them as one suite under --budget (weighted by that
saving; a region matching a bundled operator starts from its kernel, so the tuner
can tune it), deploy only kernels faster than what they replace into the registry
(kevolve-mcp registry), and verify the patched model end to end. --export writes
the kevolve_kernels package: import it and call kevolve_kernels.patch(model).`,
		Example: `  kevolve-mcp optimize --model my_model.py --budget 40 --export out/
  kevolve-mcp optimize --model level3/44_MiniGPTBlock.py --operator claude --budget 200 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return optimizeRun(c, &oo, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	optimizeFlags(cmd.Flags(), &oo)
	_ = cmd.MarkFlagRequired("model")
	_ = cmd.MarkFlagFilename("model", "py")
	return cmd
}

// optimizeFlags registers optimize's flags on f.
func optimizeFlags(f *pflag.FlagSet, oo *optimizeOptions) {
	f.StringVar(&oo.req.Model, "model", "", "KernelBench-format model `file`")
	f.StringVar(&oo.req.Target, "target", "auto", "nvidia, amd, cpu or auto")
	f.StringVar(&oo.req.Language, "language", "", "kernel language: c, cuda, hip or triton (default: the target's first: cuda on nvidia, hip on amd, c on cpu)")
	f.StringVar(&oo.req.Operator, "operator", "tuner", "operator: "+launch.OperatorUsage())
	registerOperatorFlags(f, &oo.ops)
	f.IntVar(&oo.budget, "budget", 24, "evaluations for the whole job")
	f.DurationVar(&oo.req.SearchTime, "time", 0, "wall-clock bound on the search, e.g. 30m (deploy and verify follow)")
	f.IntVar(&oo.chunk, "chunk", 4, "evaluations a problem gets per turn")
	f.StringVar(&oo.policy, "policy", "greedy", "selection policy: greedy, uct or evolve")
	f.IntVar(&oo.parallel, "parallel", 0, "pipelines in flight per problem (default 1)")
	f.Float64Var(&oo.req.MinShare, "min-share", optimize.DefaultMinShare, "search regions with at least this share of the model's time")
	f.StringVar(&oo.req.Export, "export", "", "write the kevolve_kernels package into `DIR`")
	f.StringVar(&oo.req.ReportDir, "report-dir", "", "where the model's report page goes (default: runs/model-NAME beside the database)")
	f.StringVar(&oo.req.SuiteID, "suite-id", "", "the search's suite id; give an earlier one to resume it")
	f.BoolVar(&oo.compile, "compile-baseline", false, "also time torch.compile of the model (default on a GPU; slow on a CPU)")
	f.DurationVar(&oo.evalTO, "eval-timeout", 0, "limit per evaluation (default: the harness's 180 s)")
	f.BoolVar(&oo.asJSON, "json", false, "end with the summary as JSON on stdout")
	f.BoolVar(&oo.calibrate, "calibrate", true, "on a CPU never calibrated, measure it once (quick) for the SOL ranking")
	addFleetFlags(f, &oo.fleet)
}

func optimizeRun(c *cli, oo *optimizeOptions, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	ctx, h, cleanup, err := c.openSession()
	if err != nil {
		return err
	}
	defer cleanup()
	if err := oo.fleet.validate(c); err != nil {
		return err
	}
	sum, err := runs.Optimize(ctx, h, optimizeRequest(c, oo, fs, stderr))
	if err != nil {
		return err
	}
	if oo.asJSON {
		return printJSON(stdout, sum)
	}
	return sum.WriteTable(stdout)
}

// optimizeRequest is optimize's flags as a search/runs request.
func optimizeRequest(c *cli, oo *optimizeOptions, fs *pflag.FlagSet, stderr io.Writer) runs.OptimizeRequest {
	r := oo.req
	if fs.Changed("compile-baseline") {
		r.Compile = &oo.compile
	}
	r.Op, r.Budget, r.Chunk, r.Policy, r.Parallel = oo.ops.settings(), oo.budget, oo.chunk, oo.policy, oo.parallel
	r.EvalTimeout, r.Calibrate, r.Fleet, r.Stderr = oo.evalTO, oo.calibrate, oo.fleet.options(c), stderr
	return r
}

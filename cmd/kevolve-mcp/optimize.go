package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/search/suite"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newOptimizeCmd) }

// optimizeOptions are `optimize`'s flags.
type optimizeOptions struct {
	o         optimize.Options
	operator  string
	ops       operatorFlags
	budget    int
	chunk     int
	policy    string
	parallel  int
	evalTO    time.Duration
	asJSON    bool
	calibrate bool
	compile   bool       // --compile-baseline given
	fleet     fleetFlags // --workers: the searches' evaluations on a fleet
}

// newOptimizeCmd wires `kevolve-mcp optimize` to search/optimize.
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
			oo.compile = cmd.Flags().Changed("compile-baseline")
			return optimizeRun(c, &oo, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&oo.o.Model, "model", "", "KernelBench-format model `file`")
	f.StringVar(&oo.o.Target, "target", "auto", "nvidia, amd, cpu or auto")
	f.StringVar(&oo.o.Language, "language", "", "kernel language: c, cuda, hip or triton (default: the target's first: cuda on nvidia, hip on amd, c on cpu)")
	f.StringVar(&oo.operator, "operator", "tuner", "operator: "+launch.OperatorUsage())
	registerOperatorFlags(f, &oo.ops)
	f.IntVar(&oo.budget, "budget", 24, "evaluations for the whole job")
	f.DurationVar(&oo.o.SearchTime, "time", 0, "wall-clock bound on the search, e.g. 30m (deploy and verify follow)")
	f.IntVar(&oo.chunk, "chunk", 4, "evaluations a problem gets per turn")
	f.StringVar(&oo.policy, "policy", "greedy", "selection policy: greedy, uct or evolve")
	f.IntVar(&oo.parallel, "parallel", 0, "pipelines in flight per problem (default 1)")
	f.Float64Var(&oo.o.MinShare, "min-share", 0.02, "search regions with at least this share of the model's time")
	f.StringVar(&oo.o.Export, "export", "", "write the kevolve_kernels package into `DIR`")
	f.StringVar(&oo.o.ReportDir, "report-dir", "", "where the model's report page goes (default: runs/model-NAME beside the database)")
	f.StringVar(&oo.o.SuiteID, "suite-id", "", "the search's suite id; give an earlier one to resume it")
	f.BoolVar(&oo.o.Compile, "compile-baseline", false, "also time torch.compile of the model (default on a GPU; slow on a CPU)")
	f.DurationVar(&oo.evalTO, "eval-timeout", 0, "limit per evaluation (default: the harness's 180 s)")
	f.BoolVar(&oo.asJSON, "json", false, "end with the summary as JSON on stdout")
	f.BoolVar(&oo.calibrate, "calibrate", true, "on a CPU never calibrated, measure it once (quick) for the SOL ranking")
	addFleetFlags(f, &oo.fleet)
	_ = cmd.MarkFlagRequired("model")
	_ = cmd.MarkFlagFilename("model", "py")
	return cmd
}

func optimizeRun(c *cli, oo *optimizeOptions, stdout, stderr io.Writer) error {
	ctx, a, db, cleanup, err := c.openSession()
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := store.New(ctx, db)
	if err != nil {
		return err
	}
	if err := oo.fleet.validate(c); err != nil {
		return err
	}
	// The model is profiled and verified on this host's device, so its
	// target is this host's even when a fleet runs the searches.
	p, err := a.launcher(st, stderr, false).PrepareSuite(ctx, optimizeRequest(oo))
	if err != nil {
		return err
	}
	o := oo.o
	o.Target, o.Ceilings = p.Target, p.Adapter.Ceilings
	tg := target.MustGet(target.Name(o.Target))
	if o.Language == "" {
		o.Language = tg.DefaultLanguage()
	}
	if tg.GPU() && !oo.compile {
		o.Compile = true
	}
	if oo.fleet.enabled() {
		fe, stop, err := oo.fleet.startFleet(ctx, a, c, search.Problem{Target: o.Target}, filepath.Join(filepath.Dir(c.g.db), "fleet"), stderr)
		if err != nil {
			return err
		}
		defer stop()
		p.Eval = fe
	}
	o.Tuner = p.Operator.Name() == "tuner"
	o.DataDir = filepath.Dir(c.g.db)
	if o.ReportDir == "" {
		// Beside the run reports: runs/<model file's name>.
		o.ReportDir = filepath.Join(o.DataDir, "runs", "model-"+strings.TrimSuffix(filepath.Base(o.Model), ".py"))
	}
	o.Log = c.logger
	parallel, err := oo.fleet.parallelism(oo.parallel, o.Target, a.localGPUs)
	if err != nil {
		return err
	}
	r := p.Runner(p.Budget, parallel, func(s suite.State) {
		fmt.Fprintf(stderr, "optimize: %s: %d evaluations, best %.2fx\n", filepath.Base(s.Name), s.Used, s.BestFitness)
	})
	fmt.Fprintf(stderr, "optimize %s on %s: profiling...\n", o.Model, o.Target)
	sum, err := optimize.Run(ctx, p.Adapter.Ev, a.db, r, o)
	if err != nil {
		return err
	}
	if oo.asJSON {
		return printJSON(stdout, sum)
	}
	return writeOptimizeTable(stdout, sum)
}

// optimizeRequest is optimize's flags as a launch request: one suite over
// the model's hot regions, with the suite's stopping rules.
func optimizeRequest(oo *optimizeOptions) launch.SuiteRequest {
	r := launch.Request{Spec: engine.ProblemSpec{Target: oo.o.Target, Language: oo.o.Language}, Operator: oo.operator, Op: oo.ops.settings(),
		Eval: launch.EvalSettings{Timeout: oo.evalTO, Calibrate: oo.calibrate}}
	r.Start.Policy, r.Start.Budget.Evals, r.Start.Config.Policy.Draft = oo.policy, oo.budget, launch.DraftUnset
	return launch.SuiteRequest{Request: r, Chunk: oo.chunk}
}

func writeOptimizeTable(w io.Writer, s *optimize.Summary) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s on %s (%s), forward %.0f us\n", s.Model, s.Device, s.Arch, s.ForwardUs)
	fmt.Fprintln(tw, "op\tshare\theadroom\tsaving\tamdahl\tproblem\tnote")
	for _, op := range s.Ops {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.1fx\t%.1f%%\t%.2fx\t%s\t%s\n", op.Name, 100*op.Share, op.Headroom, 100*op.Saving, op.Amdahl, op.ProblemID, op.Note)
	}
	for _, d := range s.Deployed {
		fmt.Fprintf(tw, "deployed\t%s %v %s on %s: %.2fx (entry %s)\n", d.Op, d.Shapes, d.Dtype, d.Arch, d.Speedup, d.ID)
	}
	for _, r := range s.Rejected {
		fmt.Fprintf(tw, "not deployed\t%s\n", r)
	}
	if e := s.EndToEnd; e != nil {
		fmt.Fprintf(tw, "end to end\tcorrect %v, %.3fx vs eager, %.3fx vs torch.compile, %.3fx predicted %s\n", e.Correct, e.SpeedupVsEager, e.SpeedupVsCompile, e.PredictedSpeedup, e.Detail)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	if s.Export != "" {
		fmt.Fprintf(tw, "export\t%s (import kevolve_kernels; kevolve_kernels.patch(model))\n", s.Export)
	}
	if s.Report != "" {
		fmt.Fprintf(tw, "report\t%s\n", s.Report)
	}
	fmt.Fprintf(tw, "wall\t%.0f s\n", s.WallS)
	return tw.Flush()
}

// modelService wires the model flow's tools (model_profile, deploy,
// verify_model) to the server's worker, database and search store; nil
// when the worker or the database is missing (the tools say so).
func modelService(a *app, d tools.Deps) *optimize.Service {
	if d.Evaluator == nil || a.db == nil {
		return nil
	}
	svc := &optimize.Service{Jobs: d.Evaluator, DB: a.db, DataDir: filepath.Dir(a.g.db),
		Ceilings: func(ctx context.Context) *sol.Ceilings {
			if c, err := sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), ""); err == nil {
				return &c
			}
			return nil
		},
		// The model runs on this host's device: auto is its GPU (or CPU).
		ResolveTarget: a.launcher(nil, nil, false).ResolveTarget}
	if st, err := store.New(context.Background(), a.db); err == nil {
		svc.Store = st
	}
	return svc
}

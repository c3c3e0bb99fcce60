package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/runs"
)

func init() { register(newEvolveCmd) }

// evolveOptions are `evolve`'s flags.
type evolveOptions struct {
	req       launch.Request // the problem, policy, budget, seed and configuration
	target    string
	operator  string
	evalTO    time.Duration
	resume    string
	asJSON    bool
	calibrate bool
	reportDir string
	ops       operatorFlags // the model and agent operators' settings (operators.go)
	suite     suiteFlags    // --suite (suite.go)
	fleet     fleetFlags    // --workers and the coordinator (evolve_fleet.go)
	parallel  int           // --parallel: pipelines in flight (0 = default)

	// kernelPolicy is the harness's reference_ops policy (--kernel-policy).
	kernelPolicy string
}

// newEvolveCmd wires `kevolve-mcp evolve` flags to search/runs; the
// search itself lives there.
func newEvolveCmd(c *cli) *cobra.Command {
	var eo evolveOptions
	o := &eo.req.Start
	cmd := &cobra.Command{
		Use:   "evolve [--problem P] [--start FILE] [--policy greedy|uct|evolve] [--budget N] [--resume RUN] [--json]",
		Short: "Graph search for a faster kernel (the tuner operator needs no LLM)",
		Long: `Search for a faster kernel: a graph of candidates derived from a start kernel,
each checked and timed by the harness, expanded by a selection policy (greedy,
uct, evolve) with an operator (tuner: rewrites the kernel's TUNABLES, no LLM),
until a budget or another stopping rule ends it. A live progress line goes to
stderr; the summary (or, with --json, the summary as JSON) to stdout. Every node
is a checkpoint: a killed run continues with --resume RUN.

  evolve list | show RUN | best RUN | report RUN   inspect past runs`,
		Example: `  kevolve-mcp evolve --problem llm/rmsnorm --operator tuner --budget 40
  kevolve-mcp evolve --problem my_ref.py --start my_kernel.py --policy evolve --time 30m
  kevolve-mcp evolve --resume r-20261122-131958-962e33 --budget 60`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := harness.CheckKernelPolicy(eo.kernelPolicy); err != nil {
				return err
			}
			return evolveRun(c, &eo, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&eo.req.Spec.Name, "problem", corpus.Default, "corpus `problem` or KernelBench-format reference file")
	f.StringVar(&eo.req.Spec.StartFile, "start", "", "root candidate `file` (default: the corpus start kernel for the target)")
	f.StringVar(&eo.target, "target", "auto", "cpu, nvidia or auto")
	f.StringVar(&eo.req.Spec.Language, "language", "", "start kernel kind: c, cuda or triton (default c on cpu, cuda on nvidia)")
	f.StringVar(&eo.req.Spec.ShapeSet, "shapes", "", "shape set: small or large (default small on cpu, large on a GPU)")
	f.StringVar(&o.Policy, "policy", "greedy", "selection policy: greedy, uct or evolve")
	f.StringVar(&eo.operator, "operator", "tuner", "operator: "+launch.OperatorUsage())
	registerOperatorFlags(f, &eo.ops)
	registerSuiteFlags(f, &eo.suite)
	f.IntVar(&o.Budget.Evals, "budget", 30, "evaluations, the start kernel's included")
	f.DurationVar(&o.Budget.Time, "time", 0, "wall-clock budget, e.g. 30m (0 = none)")
	f.IntVar(&o.Budget.Tokens, "tokens", 0, "token budget (0 = none)")
	f.IntVar(&o.Budget.Plateau, "plateau", 0, "stop after `N` evaluations without a new best (0 = off)")
	f.Float64Var(&o.Budget.SOLEpsilon, "sol-eps", 0, "stop once the best beats the baseline within (1+`eps`)·t_SOL (0 = off)")
	f.Float64Var(&o.Budget.TargetSpeedup, "target-speedup", 0, "stop once the best reaches this fitness (0 = off)")
	f.StringVar(&o.Baseline, "baseline", "eager", "fitness is the speedup over eager or compile (torch.compile)")
	f.IntVar(&o.Config.Policy.Draft, "draft", -1, "draft phase: independent children of the start kernel first (default 0; evolve: one per island)")
	f.IntVar(&o.Config.Policy.Islands, "islands", 0, "evolve: number of islands (default 4)")
	f.IntVar(&o.Config.SupervisorWindow, "supervise", 0, "switch policy or lineage after `N` evaluations without a new best (0 = off)")
	f.Int64Var(&o.Seed, "seed", 0, "random seed (default: from the clock)")
	f.DurationVar(&eo.evalTO, "eval-timeout", 0, "limit per evaluation (default: the harness's 180 s)")
	f.StringVar(&eo.kernelPolicy, "kernel-policy", "default", kernelPolicyUsage)
	f.StringVar(&eo.resume, "resume", "", "continue `RUN` (a paused or killed run; with --budget, extend a finished one); an id, a unique prefix or the short id the progress line prints")
	f.BoolVar(&eo.asJSON, "json", false, "end with the run summary as JSON on stdout")
	f.BoolVar(&eo.calibrate, "calibrate", true, "on a CPU never calibrated, measure it once (quick) so % of SOL can be shown")
	f.StringVar(&eo.reportDir, "report-dir", "", "where reports go (default: runs/RUN beside the database)")
	addFleetFlags(f, &eo.fleet)
	f.IntVar(&eo.parallel, "parallel", 0, "select→propose→evaluate pipelines in flight at once (default: 1 on the CPU, 4 per GPU of this host up to its cores; with --workers, one per CPU worker slot or two per GPU)")
	_ = cmd.RegisterFlagCompletionFunc("problem", completeReference)
	_ = cmd.RegisterFlagCompletionFunc("target", fixedCompletion("auto", "cpu", "nvidia"))
	_ = cmd.RegisterFlagCompletionFunc("language", fixedCompletion("c", "cuda", "triton"))
	_ = cmd.RegisterFlagCompletionFunc("policy", fixedCompletion(launch.Policies()...))
	_ = cmd.RegisterFlagCompletionFunc("operator", fixedCompletion(launch.OperatorPrefixes()...))
	_ = cmd.RegisterFlagCompletionFunc("baseline", fixedCompletion("eager", "compile"))
	_ = cmd.RegisterFlagCompletionFunc("resume", completeRunID(c))
	_ = cmd.MarkFlagFilename("start", "py")
	cmd.AddCommand(newEvolveListCmd(c), newEvolveInspectCmd(c, "show"), newEvolveInspectCmd(c, "best"), newEvolveInspectCmd(c, "report"),
		newEvolveExportCmd(c))
	return cmd
}

func evolveRun(c *cli, eo *evolveOptions, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	if err := eo.fleet.validate(c); err != nil {
		return err
	}
	if err := launch.CheckOperator(eo.operator); err != nil {
		return err
	}
	ctx, h, cleanup, err := c.openSession()
	if err != nil {
		return err
	}
	defer cleanup()
	req := evolveRequest(c, eo, fs, stderr)
	if eo.suite.spec != "" {
		res, err := runs.Suite(ctx, h, runs.SuiteRequest{Request: req.Request, Given: req.Given, Suite: eo.suite.spec, ID: eo.suite.id,
			Chunk: eo.suite.chunk, Remote: req.Remote, Stderr: stderr})
		if res == nil {
			return err
		}
		return printResult(res, err, eo.asJSON, stdout)
	}
	res, err := runs.Evolve(ctx, h, req)
	if res == nil {
		return err
	}
	return printResult(res, err, eo.asJSON, stdout)
}

// evolveRequest is evolve's flags as a search/runs request.
func evolveRequest(c *cli, eo *evolveOptions, fs *pflag.FlagSet, stderr io.Writer) runs.EvolveRequest {
	r := eo.req
	r.Spec.Target, r.Operator, r.Op = eo.target, eo.operator, eo.ops.settings()
	r.Eval = launch.EvalSettings{Timeout: eo.evalTO, KernelPolicy: eo.kernelPolicy, Calibrate: eo.calibrate}
	given := runs.BudgetGiven{Evals: fs.Changed("budget"), Time: fs.Changed("time"), Tokens: fs.Changed("tokens"),
		Plateau: fs.Changed("plateau"), SOLEpsilon: fs.Changed("sol-eps")}
	return runs.EvolveRequest{Request: r, Resume: eo.resume, Given: given, Parallel: eo.parallel,
		Fleet: eo.fleet.options(c), Remote: eo.fleet.remote(), ReportDir: eo.reportDir, Stderr: stderr}
}

// textResult is a search's outcome that prints as a table.
type textResult interface{ WriteText(io.Writer) error }

// printResult prints res as JSON or text, then returns the search's own
// error: a stopped run still shows what it found.
func printResult(res textResult, runErr error, asJSON bool, stdout io.Writer) error {
	var err error
	if asJSON {
		err = printJSON(stdout, res)
	} else {
		err = res.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	return runErr
}

func newEvolveListCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Past runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return inspect(c, runs.InspectRequest{Verb: "list"}, asJSON, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// inspect prints what runs.Inspect shows for req: JSON with asJSON, else text.
func inspect(c *cli, req runs.InspectRequest, asJSON bool, stdout io.Writer) error {
	h := c.host()
	defer h.Close()
	v, err := runs.Inspect(context.Background(), h, req)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, v.JSON)
	}
	return v.WriteText(stdout)
}

var inspectShort = map[string]string{
	"show":   "A run's summary and every node",
	"best":   "The best kernel's code (--json: the whole node)",
	"report": "Write the run's report and print its path",
}

// newEvolveInspectCmd is evolve show|best|report RUN.
func newEvolveInspectCmd(c *cli, verb string) *cobra.Command {
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   verb + " RUN",
		Short: inspectShort[verb],
		Long: inspectShort[verb] + `.

RUN is a run's id, a unique prefix of it, or its last characters as the
progress line prints them (f7c4ce); shell completion lists the runs.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRunID(c),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inspect(c, runs.InspectRequest{Verb: verb, Ref: args[0], ReportDir: dir}, asJSON, cmd.OutOrStdout())
		},
	}
	if verb != "report" {
		cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	} else {
		cmd.Flags().StringVar(&dir, "report-dir", "", "report folder (default: runs/RUN beside the database)")
	}
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func init() { register(newEvolveCmd) }

// evolveOptions are `evolve`'s flags.
type evolveOptions struct {
	spec      engine.ProblemSpec
	start     engine.StartOptions
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

// newEvolveCmd wires `kevolve-mcp evolve` flags to search/engine; the
// search itself lives there.
func newEvolveCmd(c *cli) *cobra.Command {
	var eo evolveOptions
	o := &eo.start
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
	f.StringVar(&eo.spec.Name, "problem", corpus.Default, "corpus `problem` or KernelBench-format reference file")
	f.StringVar(&eo.spec.StartFile, "start", "", "root candidate `file` (default: the corpus start kernel for the target)")
	f.StringVar(&eo.target, "target", "auto", "cpu, nvidia or auto")
	f.StringVar(&eo.spec.Language, "language", "", "start kernel kind: c, cuda or triton (default c on cpu, cuda on nvidia)")
	f.StringVar(&eo.spec.ShapeSet, "shapes", "", "shape set: small or large (default small on cpu, large on a GPU)")
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
	ctx, a, db, cleanup, err := c.openSession()
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := store.New(ctx, db)
	if err != nil {
		return err
	}
	l := a.launcher(st, stderr, eo.fleet.remote())
	if eo.suite.spec != "" {
		if err := launch.Preflight(ctx, eo.operator); err != nil {
			return err
		}
		return evolveSuite(ctx, a, l, eo, fs, stdout, stderr)
	}
	if err := preflight(ctx, l, st, eo, stderr); err != nil {
		return err
	}
	var run *search.Run
	if eo.resume != "" {
		if run, err = resumedRun(ctx, l, st, eo.resume, eo.operator, stderr); err != nil {
			return err
		}
	}
	p, err := prepareEvolve(ctx, l, eo, run)
	if err != nil {
		return err
	}
	if eo.fleet.enabled() {
		fe, stop, err := eo.fleet.startFleet(ctx, a, c, p.Start.Problem, filepath.Join(filepath.Dir(c.g.db), "fleet"), stderr)
		if err != nil {
			return err
		}
		defer stop()
		p.Eval = fe
	}
	parallel, err := eo.fleet.parallelism(eo.parallel, p.Start.Problem.Target, a.localGPUs)
	if err != nil {
		return err
	}
	eng := p.Engine(nil, parallel, progressPrinter(stderr))
	mark := p.Adapter.Ev.Mark() // the in-process evaluator's evaluations and device phases (a fleet's are the workers')
	if run != nil {
		err = eng.Resume(ctx, run.ID, resumeBudget(run, eo.start.Budget, fs))
	} else if run, err = p.Create(ctx, eng); err == nil {
		o := p.Start
		fmt.Fprintf(stderr, "evolve run %s: %s on %s (%s start), policy %s, operator %s, budget %d evaluations\n",
			run.ID, o.Problem.Name, o.Problem.Target, o.Problem.Language, run.Policy, run.Operator, o.Budget.Evals)
		err = eng.Drive(ctx, run.ID)
	}
	fmt.Fprintln(stderr)
	if tp := p.Adapter.Ev.Throughput(mark); tp.Evaluations > 0 && !eo.fleet.enabled() {
		fmt.Fprintln(stderr, tp) // evaluations a minute, device busy, device phase against timed work
	}
	if run == nil {
		return err
	}
	l.Finish(context.WithoutCancel(ctx), run.ID, eo.ops.settings())
	return finishEvolve(context.WithoutCancel(ctx), c.g, l, run.ID, eo.reportDir, eo.asJSON, stdout, err)
}

// evolveRequest is evolve's flags as a launch request.
func evolveRequest(eo *evolveOptions) launch.Request {
	spec := eo.spec
	spec.Target = eo.target
	return launch.Request{Spec: spec, Start: eo.start, Operator: eo.operator, Op: eo.ops.settings(),
		Eval: launch.EvalSettings{Timeout: eo.evalTO, KernelPolicy: eo.kernelPolicy, Calibrate: eo.calibrate}}
}

// prepareEvolve assembles a new run, or the parts to continue run.
func prepareEvolve(ctx context.Context, l *launch.Launcher, eo *evolveOptions, run *search.Run) (*launch.Prepared, error) {
	if run == nil {
		return l.Prepare(ctx, evolveRequest(eo))
	}
	// A built-in problem's reference lives in the materialized corpus,
	// which a cache cleanup may have removed since the run started.
	if _, err := corpus.Get(run.Problem.Name); err == nil {
		if _, err := corpus.Materialize(corpusRoot()); err != nil {
			return nil, err
		}
	}
	return l.PrepareResume(ctx, run, evolveRequest(eo))
}

// resumedRun finds the run --resume names and records a switch of
// operator within its kind.
func resumedRun(ctx context.Context, l *launch.Launcher, st *store.SQLite, ref, op string, stderr io.Writer) (*search.Run, error) {
	id, err := st.ResolveRunID(ctx, ref)
	if err != nil {
		return nil, err
	}
	run, err := st.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	return run, switchOperator(ctx, l, run, op, stderr)
}

// resumeBudget is the resumed run's budget with the limits given on this
// command line (nil = none given: the run's own).
func resumeBudget(run *search.Run, asked search.Budget, fs *pflag.FlagSet) *search.Budget {
	if !fs.Changed("budget") && !fs.Changed("time") && !fs.Changed("tokens") && !fs.Changed("plateau") {
		return nil
	}
	nb := run.Budget
	if fs.Changed("budget") {
		nb.Evals = asked.Evals
	}
	if fs.Changed("time") {
		nb.Time = asked.Time
	}
	if fs.Changed("tokens") {
		nb.Tokens = asked.Tokens
	}
	if fs.Changed("plateau") {
		nb.Plateau = asked.Plateau
	}
	return &nb
}

// finishEvolve prints the summary and the report's path, or the JSON summary.
func finishEvolve(ctx context.Context, g globalFlags, l *launch.Launcher, runID, reportDir string, asJSON bool, stdout io.Writer, runErr error) error {
	run, err := l.Store.Run(ctx, runID)
	if err != nil {
		return errors.Join(runErr, err)
	}
	nodes, err := l.Store.Nodes(ctx, runID)
	if err != nil {
		return errors.Join(runErr, err)
	}
	sum := search.Summarize(run, nodes)
	if reportDir == "" {
		reportDir = filepath.Join(filepath.Dir(g.db), "runs", runID)
	}
	path, rerr := l.Report(ctx, runID, reportDir)
	if asJSON {
		out := struct {
			search.Summary
			Report string `json:"report,omitempty"`
		}{sum, path}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		if err := engine.WriteSummary(stdout, sum); err != nil {
			return err
		}
		if rerr == nil {
			fmt.Fprintf(stdout, "report\t%s\n", path)
		}
	}
	return errors.Join(runErr, rerr)
}

// ceilingsFor resolves the device's ceilings, calibrating an uncalibrated
// CPU once when allowed.
func ceilingsFor(ctx context.Context, a *app, calibrate bool, stderr io.Writer) (sol.Ceilings, error) {
	rep := a.devices.Get(ctx, false)
	c, err := sol.ForDevice(ctx, a.db, rep, "")
	if err == nil || len(rep.GPUs) > 0 || !calibrate {
		return c, err
	}
	fmt.Fprintln(stderr, "calibrating this CPU once (quick: copy bandwidth and fp32 matmul rate)...")
	if _, err := sol.CalibrateAndStore(ctx, a.db, sol.CalibrateOptions{Python: a.python, Device: "cpu", Quick: true}); err != nil {
		return sol.Ceilings{}, err
	}
	return sol.ForDevice(ctx, a.db, rep, "")
}

// progressPrinter redraws one line on a terminal, else prints one per node.
func progressPrinter(w io.Writer) func(engine.Status) {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return func(s engine.Status) {
		line := engine.ProgressLine(s)
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			return
		}
		fmt.Fprintln(w, line)
	}
}

func newEvolveListCmd(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Past runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, done, err := openSearchStore(c)
			if err != nil {
				return err
			}
			defer done()
			runs, err := st.Runs(context.Background())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), runs)
			}
			return engine.WriteRuns(cmd.OutOrStdout(), runs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func openSearchStore(c *cli) (*store.SQLite, func(), error) {
	a := c.newApp()
	if err := a.openDB(); err != nil {
		a.close()
		return nil, nil, err
	}
	st, err := store.New(context.Background(), a.db)
	if err != nil {
		a.close()
		return nil, nil, err
	}
	return st, a.close, nil
}

// showJSON is `evolve show --json`: the summary and every node (code,
// result, notes), as the table shows them.
type showJSON struct {
	search.Summary
	Nodes []*search.Node `json:"nodes"`
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
			st, done, err := openSearchStore(c)
			if err != nil {
				return err
			}
			defer done()
			return evolveInspect(context.Background(), c, st, verb, args[0], asJSON, dir, cmd.OutOrStdout())
		},
	}
	if verb != "report" {
		cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	} else {
		cmd.Flags().StringVar(&dir, "report-dir", "", "report folder (default: runs/RUN beside the database)")
	}
	return cmd
}

func evolveInspect(ctx context.Context, c *cli, st *store.SQLite, verb, ref string, asJSON bool, dir string, stdout io.Writer) error {
	id, err := st.ResolveRunID(ctx, ref)
	if err != nil {
		return err
	}
	run, err := st.Run(ctx, id)
	if err != nil {
		return err
	}
	nodes, err := st.Nodes(ctx, id)
	if err != nil {
		return err
	}
	switch verb {
	case "show":
		if asJSON {
			return printJSON(stdout, showJSON{search.Summarize(run, nodes), nodes})
		}
		if err := engine.WriteSummary(stdout, search.Summarize(run, nodes)); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		if err := engine.WriteNodes(stdout, nodes); err != nil {
			return err
		}
		return writeFleetPanel(ctx, st, run, nodes, stdout)
	case "best":
		best := search.NewGraph(nodes).Node(run.BestNode)
		if best == nil {
			return fmt.Errorf("run %s has no correct kernel yet", id)
		}
		if asJSON {
			return printJSON(stdout, best)
		}
		_, err := io.WriteString(stdout, best.Code)
		return err
	}
	if dir == "" {
		dir = filepath.Join(filepath.Dir(c.g.db), "runs", id)
	}
	// The roofline needs this machine's ceilings; without them (never
	// calibrated) the page says so and draws none.
	var ceil *sol.Ceilings
	a := c.newApp()
	defer a.close()
	if err := a.openDB(); err == nil {
		if cl, err := ceilingsFor(ctx, a, false, io.Discard); err == nil {
			ceil = &cl
		}
	}
	path, err := engine.WriteReport(ctx, st, id, dir, ceil)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, path)
	return nil
}

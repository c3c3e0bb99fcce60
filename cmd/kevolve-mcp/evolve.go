package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// evolveCmd wires `kevolve-mcp evolve` flags to search/engine; the search
// itself lives there.
func evolveCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return evolveInspect(g, logger, args, stdout, stderr)
	}
	fs := newFlags("evolve", stderr)
	var spec engine.ProblemSpec
	var o engine.StartOptions
	fs.StringVar(&spec.Name, "problem", corpus.Default, "corpus `problem` or KernelBench-format reference file")
	fs.StringVar(&spec.StartFile, "start", "", "root candidate `file` (default: the corpus start kernel for the target)")
	target := fs.String("target", "auto", "cpu, nvidia or auto")
	fs.StringVar(&spec.Language, "language", "", "start kernel kind: c, cuda or triton (default c on cpu, cuda on nvidia)")
	fs.StringVar(&spec.ShapeSet, "shapes", "", "shape set: small or large (default small on cpu, large on a GPU)")
	fs.StringVar(&o.Policy, "policy", "greedy", "selection policy: greedy, uct or evolve")
	opName := fs.String("operator", "tuner", "operator: tuner")
	fs.IntVar(&o.Budget.Evals, "budget", 30, "evaluations, the start kernel's included")
	fs.DurationVar(&o.Budget.Time, "time", 0, "wall-clock budget, e.g. 30m (0 = none)")
	fs.IntVar(&o.Budget.Tokens, "tokens", 0, "token budget (0 = none)")
	fs.IntVar(&o.Budget.Plateau, "plateau", 0, "stop after `N` evaluations without a new best (0 = off)")
	fs.Float64Var(&o.Budget.SOLEpsilon, "sol-eps", 0, "stop once the best beats the baseline within (1+`eps`)·t_SOL (0 = off)")
	fs.Float64Var(&o.Budget.TargetSpeedup, "target-speedup", 0, "stop once the best reaches this fitness (0 = off)")
	fs.StringVar(&o.Baseline, "baseline", "eager", "fitness is the speedup over eager or compile (torch.compile)")
	fs.IntVar(&o.Config.Policy.Draft, "draft", -1, "draft phase: independent children of the start kernel first (default 0; evolve: one per island)")
	fs.IntVar(&o.Config.Policy.Islands, "islands", 0, "evolve: number of islands (default 4)")
	fs.IntVar(&o.Config.SupervisorWindow, "supervise", 0, "switch policy or lineage after `N` evaluations without a new best (0 = off)")
	fs.Int64Var(&o.Seed, "seed", 0, "random seed (default: from the clock)")
	evalTimeout := fs.Duration("eval-timeout", 0, "limit per evaluation (default: the harness's 180 s)")
	resume := fs.String("resume", "", "continue `RUN` (a paused or killed run; with --budget, extend a finished one)")
	asJSON := fs.Bool("json", false, "end with the run summary as JSON on stdout")
	calibrate := fs.Bool("calibrate", true, "on a CPU never calibrated, measure it once (quick) so % of SOL can be shown")
	reportDir := fs.String("report-dir", "", "where reports go (default: runs/RUN beside the database)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("evolve: unexpected argument %q", fs.Arg(0))
	}
	budgetSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "budget" || f.Name == "time" || f.Name == "tokens" || f.Name == "plateau" {
			budgetSet = true
		}
	})
	op, err := operator.ByName(*opName)
	if err != nil {
		return err
	}
	a := newApp(g, logger)
	defer a.close()
	ctx, cancel := signalContext()
	defer cancel()
	if err := a.openDB(); err != nil {
		return err
	}
	st, err := store.New(ctx, a.db)
	if err != nil {
		return err
	}
	ev, err := a.evaluator()
	if err != nil {
		return err
	}
	var run *search.Run
	if *resume != "" {
		if run, err = st.Run(ctx, *resume); err != nil {
			return err
		}
		if run.Operator != op.Name() {
			return fmt.Errorf("run %s used operator %s: resume it with --operator %s", run.ID, run.Operator, run.Operator)
		}
	} else {
		rep := a.devices.Get(ctx, false)
		spec.Target = strings.ToLower(*target)
		if spec.Target == "auto" || spec.Target == "" {
			spec.Target = "cpu"
			if rep.Python != nil && rep.Python.CUDAUsable {
				spec.Target = "nvidia"
			}
		}
		if spec.Target == "cuda" {
			spec.Target = "nvidia"
		}
		spec.CorpusRoot = corpusRoot()
		if o.Problem, o.StartCode, err = engine.ResolveProblem(ctx, a.registry(), spec); err != nil {
			return err
		}
		if o.Config.Policy.Draft < 0 {
			o.Config.Policy.Draft = 0
			if o.Policy == "evolve" {
				o.Config.Policy.Draft = max(o.Config.Policy.Islands, 4)
			}
		}
		for _, gpu := range rep.GPUs {
			o.Devices = append(o.Devices, gpu.Name)
		}
		if spec.Target == "cpu" {
			o.Devices = []string{rep.CPU.Model}
		}
	}
	adapter := &harnesseval.Adapter{Ev: ev, Timeout: *evalTimeout}
	if c, err := ceilingsFor(ctx, a, *calibrate, stderr); err == nil {
		adapter.Ceilings = &c
	} else {
		fmt.Fprintf(stderr, "no speed-of-light figures: %v\n", err)
	}
	eng := &engine.Engine{Store: st, Eval: adapter, Operator: op, Log: logger, OnProgress: progressPrinter(stderr)}
	if *resume != "" {
		var b *search.Budget
		if budgetSet {
			nb := run.Budget
			fs.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "budget":
					nb.Evals = o.Budget.Evals
				case "time":
					nb.Time = o.Budget.Time
				case "tokens":
					nb.Tokens = o.Budget.Tokens
				case "plateau":
					nb.Plateau = o.Budget.Plateau
				}
			})
			b = &nb
		}
		err = eng.Resume(ctx, run.ID, b)
	} else {
		run, err = eng.Create(ctx, o)
		if err == nil {
			fmt.Fprintf(stderr, "evolve run %s: %s on %s (%s start), policy %s, operator %s, budget %d evaluations\n",
				run.ID, o.Problem.Name, o.Problem.Target, o.Problem.Language, run.Policy, run.Operator, o.Budget.Evals)
			err = eng.Drive(ctx, run.ID)
		}
	}
	fmt.Fprintln(stderr)
	if run == nil {
		return err
	}
	return finishEvolve(context.WithoutCancel(ctx), g, st, run.ID, *reportDir, *asJSON, stdout, err)
}

// finishEvolve prints the summary and the report's path, or the JSON summary.
func finishEvolve(ctx context.Context, g globalFlags, st *store.SQLite, runID, reportDir string, asJSON bool, stdout io.Writer, runErr error) error {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return errors.Join(runErr, err)
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return errors.Join(runErr, err)
	}
	sum := search.Summarize(run, nodes)
	if reportDir == "" {
		reportDir = filepath.Join(filepath.Dir(g.db), "runs", runID)
	}
	path, rerr := engine.WriteReport(ctx, st, runID, reportDir)
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

// evolveInspect serves evolve list | show RUN | best RUN | report RUN.
func evolveInspect(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	a := newApp(g, logger)
	defer a.close()
	ctx := context.Background()
	if err := a.openDB(); err != nil {
		return err
	}
	st, err := store.New(ctx, a.db)
	if err != nil {
		return err
	}
	fs := newFlags("evolve "+args[0], stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	dir := fs.String("report-dir", "", "report folder (report)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	runArg := func() (string, error) {
		if fs.NArg() != 1 {
			return "", fmt.Errorf("evolve %s needs a run id (see evolve list)", args[0])
		}
		return fs.Arg(0), nil
	}
	switch args[0] {
	case "list":
		runs, err := st.Runs(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, runs)
		}
		return engine.WriteRuns(stdout, runs)
	case "show", "best", "report":
		id, err := runArg()
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
		switch args[0] {
		case "show":
			if *asJSON {
				return printJSON(stdout, search.Summarize(run, nodes))
			}
			if err := engine.WriteSummary(stdout, search.Summarize(run, nodes)); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
			return engine.WriteNodes(stdout, nodes)
		case "best":
			best := search.NewGraph(nodes).Node(run.BestNode)
			if best == nil {
				return fmt.Errorf("run %s has no correct kernel yet", id)
			}
			if *asJSON {
				return printJSON(stdout, best)
			}
			_, err := io.WriteString(stdout, best.Code)
			return err
		default:
			d := *dir
			if d == "" {
				d = filepath.Join(filepath.Dir(g.db), "runs", id)
			}
			path, err := engine.WriteReport(ctx, st, id, d)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, path)
			return nil
		}
	}
	return fmt.Errorf("evolve %s: unknown; use evolve [flags], evolve list, show RUN, best RUN or report RUN", args[0])
}

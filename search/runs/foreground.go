package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// A foreground search is one a command drives in its own process until it
// ends (the evolve command), as opposed to the server's Manager: progress
// and notes go to a writer, and a killed run continues with Resume.

// EvolveRequest is one foreground search: a new run, or Resume's.
type EvolveRequest struct {
	launch.Request
	// Resume names a run to continue (an id, a unique prefix or the short
	// id the progress line prints); "" starts a new one.
	Resume string
	// Given says which budget limits the front end set: a resumed run
	// keeps its own for the others, and a suite its stopping rules.
	Given BudgetGiven
	// Parallel is the pipelines in flight (0 = Parallelism's default).
	Parallel int
	// Fleet evaluates on workers when set; Remote says they run on other
	// hosts, so this host's devices do not say which targets exist.
	Fleet  *fleet.Options
	Remote bool
	// ReportDir is where the report goes ("" = runs/RUN beside the database).
	ReportDir string
	// Stderr receives the progress line and the notes a person reads.
	Stderr io.Writer
}

// BudgetGiven says which of the request's budget limits were given.
type BudgetGiven struct{ Evals, Time, Tokens, Plateau, SOLEpsilon bool }

// EvolveResult is a finished (or stopped) run's summary and its report;
// its JSON is what `evolve --json` prints.
type EvolveResult struct {
	search.Summary
	Report    string `json:"report,omitempty"`
	reportErr error
}

// WriteText is the summary table, then the report's path when written.
func (r *EvolveResult) WriteText(w io.Writer) error {
	if err := engine.WriteSummary(w, r.Summary); err != nil {
		return err
	}
	if r.reportErr == nil {
		fmt.Fprintf(w, "report\t%s\n", r.Report)
	}
	return nil
}

// Evolve drives one search to its end on h. The result is nil when no run
// was created; otherwise it comes with the run's error (and the report's).
func Evolve(ctx context.Context, h *launch.Host, req EvolveRequest) (*EvolveResult, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	l := h.Launcher(st, req.Stderr, req.Remote)
	if err := preflight(ctx, l, st, req); err != nil {
		return nil, err
	}
	var run *search.Run
	if req.Resume != "" {
		if run, err = resumedRun(ctx, l, st, req); err != nil {
			return nil, err
		}
	}
	p, err := prepareEvolve(ctx, l, req, run)
	if err != nil {
		return nil, err
	}
	if req.Fleet != nil {
		f, stop, err := watchedFleet(ctx, h, *req.Fleet, p.Start.Problem.Target, req.Stderr)
		if err != nil {
			return nil, err
		}
		defer stop()
		p.Eval = f.Evaluator
	}
	if run, err = driveForeground(ctx, h, req, p, run); run == nil {
		return nil, err
	}
	l.Finish(context.WithoutCancel(ctx), run.ID, req.Op)
	return finishEvolve(context.WithoutCancel(ctx), h, l, run.ID, req.ReportDir, err)
}

// driveForeground runs the prepared search (a new run, or run continued) until it
// ends, with the progress line on req.Stderr.
func driveForeground(ctx context.Context, h *launch.Host, req EvolveRequest, p *launch.Prepared, run *search.Run) (*search.Run, error) {
	parallel, err := Parallelism(req.Parallel, p.Start.Problem.Target, req.Fleet, h.LocalGPUs)
	if err != nil {
		return nil, err
	}
	stderr := req.Stderr
	eng := p.Engine(nil, parallel, progressPrinter(stderr))
	mark := p.Adapter.Ev.Mark() // the in-process evaluator's evaluations and device phases (a fleet's are the workers')
	if run != nil {
		err = eng.Resume(ctx, run.ID, resumeBudget(run, req.Start.Budget, req.Given))
	} else if run, err = p.Create(ctx, eng); err == nil {
		o := p.Start
		fmt.Fprintf(stderr, "evolve run %s: %s on %s (%s start), policy %s, operator %s, budget %d evaluations\n",
			run.ID, o.Problem.Name, o.Problem.Target, o.Problem.Language, run.Policy, run.Operator, o.Budget.Evals)
		err = eng.Drive(ctx, run.ID)
	}
	fmt.Fprintln(stderr)
	if tp := p.Adapter.Ev.Throughput(mark); tp.Evaluations > 0 && req.Fleet == nil {
		fmt.Fprintln(stderr, tp) // evaluations a minute, device busy, device phase against timed work
	}
	return run, err
}

// prepareEvolve assembles a new run, or the parts to continue run.
func prepareEvolve(ctx context.Context, l *launch.Launcher, req EvolveRequest, run *search.Run) (*launch.Prepared, error) {
	if run == nil {
		return l.Prepare(ctx, req.Request)
	}
	// A built-in problem's reference lives in the materialized corpus,
	// which a cache cleanup may have removed since the run started.
	if _, err := corpus.Get(run.Problem.Name); err == nil {
		if _, err := corpus.Materialize(launch.CorpusRoot()); err != nil {
			return nil, err
		}
	}
	return l.PrepareResume(ctx, run, req.Request)
}

// resumedRun finds the run req.Resume names and records a switch of
// operator within its kind.
func resumedRun(ctx context.Context, l *launch.Launcher, st *store.SQLite, req EvolveRequest) (*search.Run, error) {
	id, err := st.ResolveRunID(ctx, req.Resume)
	if err != nil {
		return nil, err
	}
	run, err := st.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	return run, switchOperator(ctx, l, run, req.Operator, req.Stderr)
}

// resumeBudget is the resumed run's budget with the limits given on this
// command line (nil = none given: the run's own).
func resumeBudget(run *search.Run, asked search.Budget, given BudgetGiven) *search.Budget {
	if !given.Evals && !given.Time && !given.Tokens && !given.Plateau {
		return nil
	}
	nb := run.Budget
	if given.Evals {
		nb.Evals = asked.Evals
	}
	if given.Time {
		nb.Time = asked.Time
	}
	if given.Tokens {
		nb.Tokens = asked.Tokens
	}
	if given.Plateau {
		nb.Plateau = asked.Plateau
	}
	return &nb
}

// finishEvolve writes the run's report and returns its summary.
func finishEvolve(ctx context.Context, h *launch.Host, l *launch.Launcher, runID, reportDir string, runErr error) (*EvolveResult, error) {
	run, err := l.Store.Run(ctx, runID)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	nodes, err := l.Store.Nodes(ctx, runID)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	if reportDir == "" {
		reportDir = filepath.Join(h.DataDir(), "runs", runID)
	}
	path, rerr := l.Report(ctx, runID, reportDir)
	return &EvolveResult{Summary: search.Summarize(run, nodes), Report: path, reportErr: rerr}, errors.Join(runErr, rerr)
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

// preflight checks the agent operator first: before device discovery,
// evaluation or calibration, so a CLI that is missing, logged out or
// offline is reported within seconds. The error ends with the exact line
// that continues the run once fixed: a resumed run's id, or a new run
// recorded for it (paused, nothing evaluated) when its target is given.
func preflight(ctx context.Context, l *launch.Launcher, st *store.SQLite, req EvolveRequest) error {
	if !launch.NeedsPreflight(req.Operator) {
		return nil
	}
	fmt.Fprintf(req.Stderr, "checking operator %s (installed, logged in, API reachable)...\n", req.Operator)
	perr := launch.Preflight(ctx, req.Operator)
	if perr == nil {
		return nil
	}
	id := ""
	if req.Resume != "" {
		if id, _ = st.ResolveRunID(ctx, req.Resume); id == "" {
			id = req.Resume
		}
	} else if r, err := l.Record(ctx, req.Request); err == nil {
		id = r.ID
	}
	if id == "" {
		return fmt.Errorf("%w\nthen run the same command again", perr)
	}
	return fmt.Errorf("%w\nthen continue with: kevolve-mcp evolve --resume %s --operator %s", perr, id, req.Operator)
}

// switchOperator lets a resume change the operator within its kind,
// saying so (search/launch records it).
func switchOperator(ctx context.Context, l *launch.Launcher, run *search.Run, name string, stderr io.Writer) error {
	old := run.Operator
	switched, err := l.SwitchOperator(ctx, run, name)
	if switched {
		fmt.Fprintf(stderr, "run %s: operator %s replaces %s\n", run.ID, run.Operator, old)
	}
	return err
}

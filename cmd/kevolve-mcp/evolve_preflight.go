package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// preflight checks the agent operator first: before device discovery,
// evaluation or calibration, so a CLI that is missing, logged out or
// offline is reported within seconds. The error ends with the exact line
// that continues the run once fixed: a resumed run's id, or a new run
// recorded for it (paused, nothing evaluated) when its target is given.
func preflight(ctx context.Context, a *app, st *store.SQLite, op search.Operator, eo *evolveOptions, stderr io.Writer) error {
	if eo.operator != "claude" && eo.operator != "codex" {
		return nil
	}
	fmt.Fprintf(stderr, "checking operator %s (installed, logged in, API reachable)...\n", eo.operator)
	perr := operator.Preflight(ctx, eo.operator)
	if perr == nil {
		return nil
	}
	id := ""
	if eo.resume != "" {
		if id, _ = st.ResolveRunID(ctx, eo.resume); id == "" {
			id = eo.resume
		}
	} else if r, err := recordRun(ctx, a, st, op, eo); err == nil {
		id = r.ID
	}
	if id == "" {
		return fmt.Errorf("%w\nthen run the same command again", perr)
	}
	return fmt.Errorf("%w\nthen continue with: kevolve-mcp evolve --resume %s --operator %s", perr, id, eo.operator)
}

// recordRun creates a new run without evaluating anything, for a target
// given on the command line (auto would need device discovery).
func recordRun(ctx context.Context, a *app, st *store.SQLite, op search.Operator, eo *evolveOptions) (*search.Run, error) {
	spec, o := eo.spec, eo.start
	spec.Target = strings.ToLower(eo.target)
	if spec.Target == "cuda" {
		spec.Target = "nvidia"
	}
	if spec.Target == "" || spec.Target == "auto" {
		return nil, fmt.Errorf("target auto: not recorded without discovery")
	}
	spec.CorpusRoot = corpusRoot()
	var err error
	if o.Problem, o.StartCode, err = engine.ResolveProblem(ctx, a.registry(), spec); err != nil {
		return nil, err
	}
	launch.ApplyDefaults(&o)
	return launch.NewEngine(st, nil, op, nil, 0, nil).Create(ctx, o)
}

// switchOperator lets --resume change the operator within its kind (a new
// endpoint or model for openai:, another command for cmd:), recording the
// new one on the run; another kind is refused.
func switchOperator(ctx context.Context, st *store.SQLite, run *search.Run, name string, stderr io.Writer) error {
	if name == "" {
		name = "tuner"
	}
	if run.Operator == name {
		return nil
	}
	if operator.Kind(run.Operator) != operator.Kind(name) {
		return fmt.Errorf("run %s used operator %s: resume it with --operator %s (or another %s operator: a new endpoint or model)",
			run.ID, run.Operator, run.Operator, operator.Kind(run.Operator))
	}
	fmt.Fprintf(stderr, "run %s: operator %s replaces %s\n", run.ID, name, run.Operator)
	run.Operator = name
	return st.UpdateRun(ctx, run)
}

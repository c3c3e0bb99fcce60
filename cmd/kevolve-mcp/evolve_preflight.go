package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// preflight checks the agent operator first: before device discovery,
// evaluation or calibration, so a CLI that is missing, logged out or
// offline is reported within seconds. The error ends with the exact line
// that continues the run once fixed: a resumed run's id, or a new run
// recorded for it (paused, nothing evaluated) when its target is given.
func preflight(ctx context.Context, l *launch.Launcher, st *store.SQLite, eo *evolveOptions, stderr io.Writer) error {
	if !launch.NeedsPreflight(eo.operator) {
		return nil
	}
	fmt.Fprintf(stderr, "checking operator %s (installed, logged in, API reachable)...\n", eo.operator)
	perr := launch.Preflight(ctx, eo.operator)
	if perr == nil {
		return nil
	}
	id := ""
	if eo.resume != "" {
		if id, _ = st.ResolveRunID(ctx, eo.resume); id == "" {
			id = eo.resume
		}
	} else if r, err := l.Record(ctx, evolveRequest(eo)); err == nil {
		id = r.ID
	}
	if id == "" {
		return fmt.Errorf("%w\nthen run the same command again", perr)
	}
	return fmt.Errorf("%w\nthen continue with: kevolve-mcp evolve --resume %s --operator %s", perr, id, eo.operator)
}

// switchOperator lets --resume change the operator within its kind,
// saying so (search/launch records it).
func switchOperator(ctx context.Context, l *launch.Launcher, run *search.Run, name string, stderr io.Writer) error {
	old := run.Operator
	switched, err := l.SwitchOperator(ctx, run, name)
	if switched {
		fmt.Fprintf(stderr, "run %s: operator %s replaces %s\n", run.ID, run.Operator, old)
	}
	return err
}

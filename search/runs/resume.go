package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// Resume continues a paused run in this server (or takes over one marked
// running whose process is gone); budget, when non-nil, replaces the run's
// budget, which also continues a run that ended on its budget.
func (m *Manager) Resume(ctx context.Context, id string, budget *search.Budget) (*search.Run, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.resume(ctx, run, budget)
}

// ResumeWith resumes a run with the non-zero fields of patch replacing its
// budget's (a nil patch keeps the budget).
func (m *Manager) ResumeWith(ctx context.Context, id string, patch *BudgetView) (*search.Run, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return nil, err
	}
	if patch == nil || *patch == (BudgetView{}) {
		return m.resume(ctx, run, nil)
	}
	b := run.Budget
	if patch.Evals > 0 {
		b.Evals = patch.Evals
	}
	if patch.TimeS > 0 {
		b.Time = time.Duration(patch.TimeS * float64(time.Second))
	}
	if patch.Tokens > 0 {
		b.Tokens = patch.Tokens
	}
	if patch.Plateau > 0 {
		b.Plateau = patch.Plateau
	}
	if patch.SOLEpsilon > 0 {
		b.SOLEpsilon = patch.SOLEpsilon
	}
	if patch.TargetSpeedup > 0 {
		b.TargetSpeedup = patch.TargetSpeedup
	}
	return m.resume(ctx, run, &b)
}

func (m *Manager) resume(ctx context.Context, run *search.Run, budget *search.Budget) (*search.Run, error) {
	id := run.ID
	if m.Active(id) {
		if budget != nil {
			return nil, fmt.Errorf("run %s is running in this server: a new budget applies to a paused or finished run (evolve_stop it first)", id)
		}
		return run, nil
	}
	switch {
	case run.Status == search.RunStopped || run.Status == search.RunFailed:
		return nil, fmt.Errorf("run %s %s (%s) and cannot be resumed: start a new run (its best kernel is in evolve_best)", id, run.Status, run.StopReason)
	case run.Status == search.RunDone && budget == nil:
		return nil, fmt.Errorf("run %s is done (%s): give a larger budget to continue it", id, run.StopReason)
	}
	if run.Operator != OperatorName && m.o.Launch == nil {
		return nil, fmt.Errorf("operator %q is not available in this server: use evolve_start to propose kernels yourself", run.Operator)
	}
	p, err := m.launcher().PrepareResume(ctx, run, launch.Request{Operator: run.Operator, Op: m.o.Op})
	if err != nil {
		return nil, err
	}
	op, ev := m.clientOperator(p.Operator), p.Eval
	if err := m.rematerialize(ctx, run); err != nil {
		return nil, err
	}
	if budget != nil {
		// Written here, not in the drive, so the answer shows it (the
		// engine's Resume would do the same).
		run.Budget = *budget
		if run.Status == search.RunDone {
			run.Status, run.StopReason = search.RunPaused, ""
		}
		if err := m.o.Store.UpdateRun(ctx, run); err != nil {
			return nil, err
		}
	}
	d, err := m.launch(id, op, ev, true, nil, m.parallel(0, run.Problem.Target))
	if err != nil {
		return nil, err
	}
	if err := m.awaitStart(ctx, d); err != nil {
		return nil, err
	}
	return m.o.Store.Run(ctx, id)
}

// Stop ends a run. A run waiting for its agent's kernel stops at once; a
// run evaluating a kernel finishes that evaluation first (nothing in flight
// is thrown away).
func (m *Manager) Stop(ctx context.Context, id, why string) (*search.Run, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return nil, err
	}
	if finished(run.Status) {
		return run, nil
	}
	if why == "" {
		why = "stopped by the client"
	}
	if err := engine.Stop(ctx, &watchedStore{Store: m.o.Store, changed: m.changed}, id, why); err != nil {
		return nil, err
	}
	if d := m.activeDrive(id); d != nil && d.agent != nil && d.agent.current() != nil {
		d.cancel()
		select {
		case <-d.done:
		case <-ctx.Done():
		}
	}
	return m.o.Store.Run(ctx, id)
}

// rematerialize writes a corpus problem's reference again when it is gone
// (a cache cleanup since the run started): resolving the problem by name
// puts it back at the same place.
func (m *Manager) rematerialize(ctx context.Context, run *search.Run) error {
	p := run.Problem
	if _, err := os.Stat(p.ReferencePath); err == nil || m.o.Resolve == nil || p.Name == p.ReferencePath {
		return nil
	}
	// The start kernel does not matter here (the run has its nodes): an
	// error about it still leaves the reference written.
	_, _, rerr := m.o.Resolve(ctx, engine.ProblemSpec{Name: p.Name, Target: p.Target, Language: p.Language, ShapeSet: p.ShapeSet})
	if _, err := os.Stat(p.ReferencePath); err != nil {
		return fmt.Errorf("run %s: its reference %s is gone and could not be written again: %w", run.ID, p.ReferencePath, errors.Join(rerr, err))
	}
	return nil
}

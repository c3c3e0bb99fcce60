// Package engine runs a search: it starts or resumes a run and drives the
// loop select → propose → write node → evaluate → write result until a
// termination rule fires. Every node is written before its evaluation and
// again after it, each in one transaction, so a process killed at any
// moment resumes with no evaluated node lost and none evaluated twice
// except those that were in flight (one per slot: Engine.Parallel runs
// several pipelines at once, parallel.go).
//
// A server drives runs the same way the CLI does (search/launch puts the
// engine together for both):
//
//	eng := launch.NewEngine(st, adapter, op, log, parallel, notify)
//	run, err := eng.Create(ctx, opts)          // run id at once; the run is paused, its root pending
//	go eng.Drive(serverCtx, run.ID)            // cancelling serverCtx pauses the run
//	st.Events(ctx, run.ID, afterSeq, limit)    // the feed a status long poll waits on
//	engine.Stop(ctx, st, run.ID, "user")       // the loop stops at its next step
//	eng.Resume(ctx, run.ID, nil)               // continue a paused or killed run
//
// One process drives a run at a time (a lease in the store); a second
// Drive of a run that a live process holds fails with search.ErrRunBusy.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/policy"
	"github.com/kevolve/kevolve-mcp/search/termination"
)

// Config is the part of a run's settings kept in its config JSON.
type Config struct {
	Policy policy.Config `json:"policy"`
	// SupervisorWindow: after this many evaluations without a new best the
	// supervisor switches policy or resets lineage (0 = off).
	SupervisorWindow int               `json:"supervisor_window,omitempty"`
	Memory           search.MemoryMode `json:"memory,omitempty"`
	// MaxDuplicates stops a run whose operator keeps proposing kernels
	// that were already evaluated (default 50 in a row).
	MaxDuplicates int `json:"max_duplicates,omitempty"`
}

// Engine drives runs. Store, Eval and Operator are required.
type Engine struct {
	Store    search.Store
	Eval     search.Evaluator
	Operator search.Operator
	Log      *slog.Logger
	// OnProgress, when set, is called after every finished node (and once
	// at the start); calls never overlap, but with Parallel > 1 they come
	// from the slots' goroutines.
	OnProgress func(Status)
	// Parallel is how many select → propose → evaluate pipelines run at
	// once (0 or 1: one at a time). Each slot reserves one evaluation of
	// the budget when it starts, so the budget is never exceeded; a kill
	// repeats at most Parallel in-flight evaluations on resume.
	Parallel int
}

// MaxParallel bounds the pipelines a caller may ask for (the CLI's
// --parallel, the MCP tools' parallel): each holds a goroutine, an
// operator call and a queued evaluation.
const MaxParallel = 256

// Status is what a progress line shows.
type Status struct {
	Run      *search.Run
	Progress search.Progress
	Summary  search.Summary
	// Last is the node that just finished (nil at the start).
	Last *search.Node
	// ETA is the estimated time left (0 = unknown).
	ETA time.Duration
}

// StartOptions describe a new run.
type StartOptions struct {
	Problem   search.Problem
	StartCode string
	Policy    string
	Config    Config
	Baseline  string
	Budget    search.Budget
	Seed      int64
	Devices   []string
	// RunID is optional (a fresh id is made when empty).
	RunID string
}

func (e *Engine) log() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// Create writes a new run and its root node (not yet evaluated); Drive then
// runs it. Splitting the two lets a caller return the run id at once.
func (e *Engine) Create(ctx context.Context, o StartOptions) (*search.Run, error) {
	if o.StartCode == "" {
		return nil, errors.New("evolve: no start kernel")
	}
	if o.Problem.ReferencePath == "" {
		return nil, errors.New("evolve: the problem has no reference file")
	}
	base, err := search.ParseBaseline(o.Baseline)
	if err != nil {
		return nil, err
	}
	if _, err := policy.ByName(o.Policy, o.Config.Policy); err != nil {
		return nil, err
	}
	if o.Budget.Evals <= 0 && o.Budget.Time <= 0 && o.Budget.Tokens <= 0 && o.Budget.Plateau <= 0 {
		return nil, errors.New("evolve: give a budget (evaluations, time, tokens or plateau): a run without one never ends")
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano() & 0x7fffffff
	}
	cfg, _ := json.Marshal(o.Config)
	run := &search.Run{ID: o.RunID, Problem: o.Problem, Devices: o.Devices, Policy: normPolicy(o.Policy), Operator: e.Operator.Name(),
		Baseline: base, Budget: o.Budget, Seed: o.Seed, Config: cfg, Status: search.RunPaused}
	root := &search.Node{Code: o.StartCode, Language: o.Problem.Language, Operator: "start", State: search.NodePending,
		Notes: "start kernel"}
	// One transaction: a kill between run and root would leave a run that
	// resume cannot continue.
	if err := e.Store.CreateRunWithRoot(ctx, run, root); err != nil {
		return nil, err
	}
	e.event(ctx, run, search.EventStart, fmt.Sprintf("run %s: %s on %s, policy %s, operator %s, baseline %s", run.ID, o.Problem.Name, o.Problem.Target, run.Policy, run.Operator, base), nil)
	return run, nil
}

func normPolicy(p string) string {
	if p == "" {
		return "greedy"
	}
	return p
}

// Run creates a run and drives it to its end.
func (e *Engine) Run(ctx context.Context, o StartOptions) (*search.Run, error) {
	run, err := e.Create(ctx, o)
	if err != nil {
		return nil, err
	}
	return run, e.Drive(ctx, run.ID)
}

// ErrFinished is returned when resuming a run that already ended.
var ErrFinished = errors.New("run already finished")

// Resume continues a paused (or killed) run; budget, when non-nil,
// replaces the run's budget (to extend a finished run).
func (e *Engine) Resume(ctx context.Context, runID string, budget *search.Budget) error {
	run, err := e.Store.Run(ctx, runID)
	if err != nil {
		return err
	}
	if budget != nil {
		run.Budget = *budget
		if run.Status == search.RunDone {
			run.Status, run.StopReason = search.RunPaused, ""
		}
		if err := e.Store.UpdateRun(ctx, run); err != nil {
			return err
		}
	}
	switch run.Status {
	case search.RunDone, search.RunStopped, search.RunFailed:
		return fmt.Errorf("resume %s: %w (%s: %s); give a larger budget to continue it", runID, ErrFinished, run.Status, run.StopReason)
	}
	return e.Drive(ctx, runID)
}

func (e *Engine) event(ctx context.Context, run *search.Run, kind, msg string, data any) {
	ev := &search.Event{RunID: run.ID, Kind: kind, Message: msg}
	if data != nil {
		ev.Data, _ = json.Marshal(data)
	}
	// A lost event loses no search state; log and go on.
	if err := e.Store.AppendEvent(context.WithoutCancel(ctx), ev); err != nil {
		e.log().Warn("event not recorded", "run", run.ID, "kind", kind, "err", err)
	}
}

// Stop marks a run stopped (evolve_stop); a loop driving it notices at its
// next step.
func Stop(ctx context.Context, st search.Store, runID, why string) error {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return err
	}
	if run.Status == search.RunDone || run.Status == search.RunFailed {
		return nil
	}
	run.Status, run.StopReason = search.RunStopped, why
	return st.UpdateRun(ctx, run)
}

func supervisorFor(cfg Config) *termination.Supervisor {
	if cfg.SupervisorWindow <= 0 {
		return nil
	}
	return &termination.Supervisor{Window: cfg.SupervisorWindow, Cycle: policy.Names}
}

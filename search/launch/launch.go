package launch

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/memory"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// Launcher is what the host process provides to every search it starts:
// built once (by the CLI's or the server's wiring) and shared, so that a
// run started either way is assembled from the same parts.
type Launcher struct {
	// Store keeps runs (required for Prepare's memory and Create).
	Store search.Store
	// Harness returns the in-process evaluation service.
	Harness func() (*harness.Evaluator, error)
	// Evaluator, when set, is what runs evaluate on instead of an adapter
	// over Harness: a server's fleet.
	Evaluator func(ctx context.Context) (search.Evaluator, error)
	// Ceilings returns the device's ceilings, calibrating an uncalibrated
	// CPU first when calibrate is set.
	Ceilings func(ctx context.Context, calibrate bool) (*sol.Ceilings, error)
	// Knowledge opens (and refreshes) the knowledge index the operators
	// retrieve from; write-back calls it again to index the new kernel.
	Knowledge func(ctx context.Context) (*retrieval.Index, error)
	// KnowledgeDir is where a run's best kernel is written as knowledge.
	KnowledgeDir string
	// Server is this program's MCP command line for an agent's config.
	Server []string
	// ResolveTarget turns a target word (auto included) into a target.
	ResolveTarget func(ctx context.Context, s string) (string, error)
	// Resolve turns a problem spec into the problem and its start kernel.
	Resolve func(ctx context.Context, s engine.ProblemSpec) (search.Problem, string, error)
	// Devices names the devices a run on target uses.
	Devices func(ctx context.Context, target string) []string
	// Log receives the engine's log; Notes (nil = Log) the lines a person
	// reads: memory seeded, knowledge written, figures missing.
	Log   *slog.Logger
	Notes io.Writer
}

// Request is one search as a front end asks for it.
type Request struct {
	// Spec names the problem; its Target is a target word (auto, cpu,
	// nvidia, ...) that Prepare resolves.
	Spec engine.ProblemSpec
	// Start holds the policy, baseline, budget, seed and configuration
	// (a negative draft = the policy's default); Prepare fills in the
	// problem, start kernel and devices.
	Start    engine.StartOptions
	Operator string
	Op       OperatorSettings
	Eval     EvalSettings
}

// Prepared is a search ready to create: its start options with every
// default applied, its evaluator and its operator with its context.
type Prepared struct {
	Start engine.StartOptions
	// Adapter is the in-process evaluator (nil under Launcher.Evaluator);
	// Eval is what the engine uses (the adapter, or a fleet's evaluator).
	Adapter  *harnesseval.Adapter
	Eval     search.Evaluator
	Ceilings *sol.Ceilings
	// Operator is nil for ClientOperator; OperatorEnv is the context it
	// was given (nil for the tuner).
	Operator    search.Operator
	OperatorEnv *operator.Env
	Priors      []memory.Prior
	req         Request
	l           *Launcher
}

// Prepare resolves a request into a search ready to create.
func (l *Launcher) Prepare(ctx context.Context, req Request) (*Prepared, error) {
	if l.Store == nil {
		return nil, errNoStore
	}
	p := &Prepared{req: req, l: l}
	if err := p.evaluator(ctx); err != nil {
		return nil, err
	}
	o, err := l.startOptions(ctx, req)
	if err != nil {
		return nil, err
	}
	p.Start = o
	return p, p.operator(ctx, "")
}

// evaluator sets the prepared search's evaluator: the launcher's own, or
// an adapter over the in-process service.
func (p *Prepared) evaluator(ctx context.Context) error {
	if p.l.Evaluator != nil {
		ev, err := p.l.Evaluator(ctx)
		p.Eval, p.Ceilings = ev, p.l.ceilings(ctx, p.req.Eval.Calibrate)
		return err
	}
	ad, err := p.l.NewEvaluator(ctx, p.req.Eval)
	if err != nil {
		return err
	}
	p.Adapter, p.Eval, p.Ceilings = ad, ad, ad.Ceilings
	return nil
}

// operator builds the operator with its context and the memory of earlier
// runs (runID's own excluded); none for the client operator.
func (p *Prepared) operator(ctx context.Context, runID string) error {
	if p.req.Operator == ClientOperator {
		return nil
	}
	o := p.Start
	p.Priors = p.l.Priors(ctx, p.req.Op, o.Problem, o.Devices, runID)
	var err error
	p.Operator, p.OperatorEnv, err = p.l.Operator(ctx, OperatorInput{Name: p.req.Operator, Settings: p.req.Op,
		Problem: o.Problem, Devices: o.Devices, Ceilings: p.Ceilings, Priors: p.Priors})
	return err
}

// startOptions resolves the target and problem and applies the defaults.
func (l *Launcher) startOptions(ctx context.Context, req Request) (engine.StartOptions, error) {
	o, spec := req.Start, req.Spec
	if l.ResolveTarget == nil || l.Resolve == nil {
		return o, fmt.Errorf("launch: this process cannot resolve targets and problems")
	}
	t, err := l.ResolveTarget(ctx, spec.Target)
	if err != nil {
		return o, err
	}
	spec.Target = t
	if o.Problem, o.StartCode, err = l.Resolve(ctx, spec); err != nil {
		return o, err
	}
	if l.Devices != nil {
		o.Devices = l.Devices(ctx, t)
	}
	ApplyDefaults(&o)
	return o, nil
}

// Engine is the engine for this search on st (a caller's wrapper of the
// launcher's store, or the store itself when nil).
func (p *Prepared) Engine(st search.Store, parallel int, onProgress func(engine.Status)) *engine.Engine {
	if st == nil {
		st = p.l.Store
	}
	return NewEngine(st, p.Eval, p.Operator, p.l.Log, parallel, onProgress)
}

// Create writes the run and its root node, then seeds the draft phase
// with earlier runs' kernels for this arch.
func (p *Prepared) Create(ctx context.Context, eng *engine.Engine) (*search.Run, error) {
	run, err := eng.Create(ctx, p.Start)
	if err != nil {
		return nil, err
	}
	p.l.seed(ctx, eng.Store, run.ID, p.Priors)
	return run, nil
}

// NewEngine is the one place an engine is put together.
func NewEngine(st search.Store, ev search.Evaluator, op search.Operator, log *slog.Logger, parallel int, onProgress func(engine.Status)) *engine.Engine {
	return &engine.Engine{Store: st, Eval: ev, Operator: op, Log: log, Parallel: parallel, OnProgress: onProgress}
}

// note writes a line a person reads.
func (l *Launcher) note(format string, args ...any) {
	if l.Notes != nil {
		fmt.Fprintf(l.Notes, format+"\n", args...)
		return
	}
	if l.Log != nil {
		l.Log.Info(fmt.Sprintf(format, args...))
	}
}

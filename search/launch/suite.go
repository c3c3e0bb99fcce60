package launch

import (
	"context"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// SuiteRequest is a suite of searches under one budget (evolve --suite,
// optimize): Request's Start.Budget.Evals is the whole suite's.
type SuiteRequest struct {
	Request
	// Chunk is the evaluations a problem gets per turn (0 = suite's).
	Chunk int
	// Epsilon and Plateau stop a problem; nil = SuiteEpsilon and
	// SuitePlateau (the request's Start.Budget values are ignored).
	Epsilon *float64
	Plateau *int
	// Weights split the budget by problem (nil = evenly).
	Weights map[string]float64
}

// PreparedSuite is a suite ready to run on problems of Target.
type PreparedSuite struct {
	Target  string
	Devices []string
	Budget  suite.Budgeter
	// Adapter is the in-process evaluator; Eval what the engines use.
	Adapter     *harnesseval.Adapter
	Eval        search.Evaluator
	Operator    search.Operator
	OperatorEnv *operator.Env
	req         SuiteRequest
	l           *Launcher
}

// PrepareSuite resolves the suite's target, evaluator, operator (with
// its context for the target's device) and budget.
func (l *Launcher) PrepareSuite(ctx context.Context, r SuiteRequest) (*PreparedSuite, error) {
	if l.ResolveTarget == nil {
		return nil, errNoStore
	}
	ad, err := l.NewEvaluator(ctx, r.Eval)
	if err != nil {
		return nil, err
	}
	t, err := l.ResolveTarget(ctx, r.Spec.Target)
	if err != nil {
		return nil, err
	}
	p := &PreparedSuite{Target: t, Adapter: ad, Eval: ad, req: r, l: l, Budget: suiteBudget(r)}
	if l.Devices != nil {
		p.Devices = l.Devices(ctx, t)
	}
	p.Operator, p.OperatorEnv, err = l.Operator(ctx, OperatorInput{Name: r.Operator, Settings: r.Op,
		Problem: search.Problem{Target: t}, Devices: p.Devices, Ceilings: ad.Ceilings})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// suiteBudget is the request's budget with the suite's stopping rules.
func suiteBudget(r SuiteRequest) suite.Budgeter {
	b := suite.Budgeter{Total: r.Start.Budget.Evals, Chunk: r.Chunk, Epsilon: SuiteEpsilon, Plateau: SuitePlateau, Weights: r.Weights}
	if r.Epsilon != nil {
		b.Epsilon = *r.Epsilon
	}
	if r.Plateau != nil {
		b.Plateau = *r.Plateau
	}
	return b
}

// Runner is the suite's runner under budget b, parallel pipelines per
// problem, onTurn seeing each turn.
func (p *PreparedSuite) Runner(b suite.Budgeter, parallel int, onTurn func(suite.State)) *suite.Runner {
	cfg := p.req.Start.Config
	cfg.Policy.Draft = Draft(p.req.Start.Policy, cfg.Policy.Draft, cfg.Policy.Islands)
	return &suite.Runner{Engine: NewEngine(p.l.Store, p.Eval, p.Operator, p.l.Log, parallel, nil), Budget: b,
		Policy: p.req.Start.Policy, Config: cfg, Baseline: p.req.Start.Baseline, Seed: p.req.Start.Seed,
		Devices: p.Devices, OnTurn: onTurn}
}

// Finish writes back every searched problem's best kernel.
func (p *PreparedSuite) Finish(ctx context.Context, report *suite.Report) {
	for _, row := range report.Rows {
		if row.RunID != "" {
			p.l.Finish(ctx, row.RunID, p.req.Op)
		}
	}
}

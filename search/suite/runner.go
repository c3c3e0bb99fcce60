package suite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
)

// Problem is one member of the suite.
type Problem struct {
	Problem search.Problem
	Start   string
}

// Runner drives a suite: one engine run per problem, in turns the
// Budgeter hands out.
type Runner struct {
	Engine   *engine.Engine
	Budget   Budgeter
	Policy   string
	Config   engine.Config
	Baseline string
	Seed     int64
	Devices  []string
	// OnTurn, when set, sees each problem's state after its turn.
	OnTurn func(State)
}

// RunID is a problem's run in a suite: derived from the suite id and the
// problem, so a resumed suite finds its runs in the store.
func RunID(suiteID, problem string) string {
	s := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(problem), "-"), "-")
	if len(s) > 60 {
		s = s[len(s)-60:]
	}
	return suiteID + "--" + s
}

// Run runs (or resumes) the suite until its budget is spent or every
// problem has stopped, and returns its report.
func (r *Runner) Run(ctx context.Context, suiteID string, problems []Problem) (*Report, error) {
	if len(problems) == 0 {
		return nil, errors.New("suite: no problems")
	}
	st := r.Engine.Store
	states := make([]State, len(problems))
	ids := make([]string, len(problems))
	for i, p := range problems {
		ids[i] = RunID(suiteID, p.Problem.Name)
		states[i].Name = p.Problem.Name
		if _, err := st.Run(ctx, ids[i]); errors.Is(err, search.ErrNotFound) {
			if _, err := r.Engine.Create(ctx, engine.StartOptions{Problem: p.Problem, StartCode: p.Start, Policy: r.Policy, Config: r.Config,
				Baseline: r.Baseline, Budget: search.Budget{Evals: 1}, Seed: r.Seed + int64(i), Devices: r.Devices, RunID: ids[i]}); err != nil {
				return nil, fmt.Errorf("suite: %s: %w", p.Problem.Name, err)
			}
		} else if err != nil {
			return nil, err
		}
		if err := r.refresh(ctx, ids[i], &states[i]); err != nil {
			return nil, err
		}
	}
	r.turnCosts(ctx, problems, states)
	for {
		if err := ctx.Err(); err != nil {
			return r.report(ctx, ids, states), err
		}
		i, n, ok := r.Budget.Next(states)
		if !ok {
			break
		}
		before := states[i].Used
		run, err := st.Run(ctx, ids[i])
		if err != nil {
			return nil, err
		}
		b := run.Budget
		b.Evals = before + n
		err = r.Engine.Resume(ctx, ids[i], &b)
		if ctx.Err() != nil {
			return r.report(ctx, ids, states), ctx.Err()
		}
		if rerr := r.refresh(ctx, ids[i], &states[i]); rerr != nil {
			return nil, rerr
		}
		if err != nil || states[i].Used == before {
			// The run cannot go on (it failed, was stopped, or has
			// nothing new to propose): it gets nothing more.
			states[i].Exhausted = true
		}
		if r.OnTurn != nil {
			r.OnTurn(states[i])
		}
	}
	return r.report(ctx, ids, states), nil
}

// turnCosts sets each problem's CostS, which orders the turns of problems
// equally served: harness.OrderCost of its reference and start kernel on
// its target, from the engine's evaluator's stored costs where it keeps
// them (an Adapter's eval_cost, or the fleet's), else from the start
// kernel's words.
//
// Why the start kernel: when the suite schedules a turn, the candidates the
// turn will evaluate are not proposed yet; the one program of the problem
// known then is the start kernel, which every run evaluates first (its
// root) against the problem's reference, so a suite that ran before, or an
// evaluation of the same pair elsewhere, stored its cost under exactly that
// key. Its descendants run on the same reference and inputs, so it stands
// for the problem's evaluations (for KernelBench, whose start is the
// reference renamed, it is the reference's own cost).
func (r *Runner) turnCosts(ctx context.Context, problems []Problem, states []State) {
	cr, _ := r.Engine.Eval.(harness.CostReader)
	for i, p := range problems {
		var ref []byte
		if cr != nil {
			// Unreadable: no stored cost, words alone; the run's first
			// evaluation reports why.
			ref, _ = problem.ReadFile("reference", p.Problem.ReferencePath)
		}
		states[i].CostS = harness.OrderCost(ctx, cr, string(ref), p.Start, p.Problem.Target)
	}
}

// refresh derives a problem's state from its run's nodes.
func (r *Runner) refresh(ctx context.Context, runID string, s *State) error {
	nodes, err := r.Engine.Store.Nodes(ctx, runID)
	if err != nil {
		return err
	}
	var done []*search.Node
	for _, n := range nodes {
		if n.State == search.NodeDone {
			done = append(done, n)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].EvalSeq < done[j].EvalSeq })
	s.Used, s.BestFitness, s.BestTimeS, s.SinceBest = 0, 0, 0, 0
	for _, n := range done {
		if n.DuplicateOf == 0 {
			s.Used++
		}
		if n.Result.SOLSeconds > 0 {
			s.SOLSeconds = n.Result.SOLSeconds
		}
		if n.Fitness() > s.BestFitness {
			s.BestFitness, s.BestTimeS, s.SinceBest = n.Fitness(), n.Result.TimeS, 0
		} else {
			s.SinceBest++
		}
	}
	return nil
}

// Row is one problem in the end table.
type Row struct {
	State
	RunID            string  `json:"run_id"`
	Correct          bool    `json:"correct"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile"`
	PctOfSOL         float64 `json:"pct_of_sol"`
	SOLScore         float64 `json:"sol_score"`
	Tokens           int     `json:"tokens"`
	EvalS            float64 `json:"eval_s"`
}

// Report is the suite's end table.
type Report struct {
	Rows []Row `json:"rows"`
	// FastEager and FastCompile are KernelBench's fast_p for p = 0, 1,
	// 1.5, 2: the share of problems whose best is correct and more than p
	// times faster than the baseline (fast_0: correct).
	FastEager   [4]float64 `json:"fast_eager"`
	FastCompile [4]float64 `json:"fast_compile"`
	// Geomean is the geometric mean speedup over eager of the correct
	// bests; MeanSOLScore the mean SOL score over every problem.
	Geomean      float64 `json:"geomean_vs_eager"`
	MeanSOLScore float64 `json:"mean_sol_score"`
	Tokens       int     `json:"tokens"`
	// GPUSeconds is the time spent in evaluations (device time's upper
	// bound: the evaluation's whole wall time).
	GPUSeconds float64 `json:"gpu_seconds"`
	Used       int     `json:"evaluations"`
	Budget     int     `json:"budget"`
	// SavedBySOL is what stopping at the speed of light saved against a
	// fixed per-problem budget (Budget / problems); SavedByPlateau what the
	// plateau rule saved. Both went to problems with headroom.
	FixedShare     int `json:"fixed_share"`
	SavedBySOL     int `json:"saved_by_sol"`
	SavedByPlateau int `json:"saved_by_plateau"`
}

// FastP are the p of fast_p.
var FastP = [4]float64{0, 1, 1.5, 2}

func (r *Runner) report(ctx context.Context, ids []string, states []State) *Report {
	rep := &Report{Budget: r.Budget.Total, FixedShare: r.Budget.Share(len(states))}
	rep.SavedBySOL, rep.SavedByPlateau = r.Budget.Saved(states)
	logSum, correct := 0.0, 0
	for i, s := range states {
		row := Row{State: s, RunID: ids[i]}
		nodes, _ := r.Engine.Store.Nodes(ctx, ids[i])
		g := search.NewGraph(nodes)
		for _, n := range nodes {
			row.Tokens += n.Cost.Tokens
			row.EvalS += n.Cost.EvalS
		}
		if b := g.Best(); b != nil {
			res := b.Result
			row.Correct = true
			row.SpeedupVsEager, row.SpeedupVsCompile, row.PctOfSOL, row.SOLScore = res.SpeedupVsEager, res.SpeedupVsCompile, res.PctOfSOL, res.SOLScore
		}
		rep.Used += s.Used
		rep.Tokens += row.Tokens
		rep.GPUSeconds += row.EvalS
		rep.MeanSOLScore += row.SOLScore / float64(len(states))
		for k, p := range FastP {
			if row.Correct && (p == 0 || row.SpeedupVsEager > p) {
				rep.FastEager[k] += 1 / float64(len(states))
			}
			if row.Correct && (p == 0 || row.SpeedupVsCompile > p) {
				rep.FastCompile[k] += 1 / float64(len(states))
			}
		}
		if row.Correct && row.SpeedupVsEager > 0 {
			logSum += math.Log(row.SpeedupVsEager)
			correct++
		}
		rep.Rows = append(rep.Rows, row)
	}
	if correct > 0 {
		rep.Geomean = math.Exp(logSum / float64(correct))
	}
	return rep
}

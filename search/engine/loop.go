package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/policy"
	"github.com/kevolve/kevolve-mcp/search/termination"
)

// Consecutive failures that end a run rather than spin.
const (
	maxProposeFailures = 5
	maxEvalFailures    = 3
)

// driver is one process's drive of one run.
type driver struct {
	e       *Engine
	run     *search.Run
	cfg     Config
	g       *search.Graph
	pol     search.Policy
	polName string
	term    search.Termination
	sup     *termination.Supervisor
	pinned  int64 // a supervisor reset: the next parent

	// mu guards everything here, the graph and the run: a slot holds it
	// except while its operator or evaluator works (parallel.go).
	mu       sync.Mutex
	parallel int
	// evaluating maps the code hashes being evaluated now to a channel
	// closed when that evaluation ends: a second node with the same code
	// waits and is then answered from the store.
	evaluating   map[string]chan struct{}
	proposeFails int // consecutive failed proposals
	dupRun       int // consecutive proposals of already-evaluated code

	baseElapsed float64
	t0          time.Time
	evalWall    float64 // seconds inside Evaluate in this drive, for the ETA
	evalCount   int
}

// Drive runs the loop of a created or resumed run until a termination rule
// fires, ctx ends (the run is then paused: resume continues it) or the run
// is stopped from outside.
func (e *Engine) Drive(ctx context.Context, runID string) error {
	release, err := e.holdLease(ctx, runID)
	if err != nil {
		return err
	}
	defer release()
	run, err := e.Store.Run(ctx, runID)
	if err != nil {
		return err
	}
	var cfg Config
	if len(run.Config) > 0 {
		if err := json.Unmarshal(run.Config, &cfg); err != nil {
			return fmt.Errorf("run %s: config: %w", runID, err)
		}
	}
	if cfg.MaxDuplicates <= 0 {
		cfg.MaxDuplicates = 50
	}
	if cfg.Memory == "" {
		cfg.Memory = search.MemoryInherit
	}
	pol, err := policy.ByName(run.Policy, cfg.Policy)
	if err != nil {
		return err
	}
	nodes, err := e.Store.Nodes(ctx, runID)
	if err != nil {
		return err
	}
	d := &driver{e: e, run: run, cfg: cfg, g: search.NewGraph(nodes), pol: pol, polName: run.Policy,
		term: termination.FromBudget(run.Budget), sup: supervisorFor(cfg),
		baseElapsed: run.ElapsedS, t0: time.Now(), parallel: max(1, e.Parallel), evaluating: map[string]chan struct{}{}}
	resumed := run.Status != search.RunPaused || d.g.EvalCount() > 0
	run.Status = search.RunRunning
	if err := e.Store.UpdateRun(ctx, run); err != nil {
		return err
	}
	if resumed {
		e.event(ctx, run, search.EventResume, fmt.Sprintf("resumed with %d evaluations done", d.g.EvalCount()), nil)
	}
	d.mu.Lock()
	if d.parallel > 1 {
		err = d.loopParallel(ctx)
	} else {
		err = d.loop(ctx)
	}
	d.mu.Unlock()
	return d.finish(ctx, err)
}

func (d *driver) elapsed() float64 { return d.baseElapsed + time.Since(d.t0).Seconds() }

// finish records how the drive ended: paused on cancellation, failed on an
// error, done or stopped otherwise (already set by the loop).
func (d *driver) finish(ctx context.Context, loopErr error) error {
	bg := context.WithoutCancel(ctx)
	d.run.ElapsedS = d.elapsed()
	if cur, err := d.e.Store.Run(bg, d.run.ID); err == nil && cur.Status == search.RunStopped {
		d.run.Status, d.run.StopReason = search.RunStopped, cur.StopReason
	} else {
		switch {
		case loopErr == nil:
		case ctx.Err() != nil:
			d.run.Status, d.run.StopReason = search.RunPaused, "interrupted: resume continues it"
			loopErr = nil
		case errors.Is(loopErr, search.ErrOperatorUnavailable):
			// Nothing is lost and nothing is wrong with the run: it waits
			// for its operator (the error says how to fix it).
			d.run.Status, d.run.StopReason = search.RunPaused, loopErr.Error()
		default:
			d.run.Status, d.run.StopReason = search.RunFailed, loopErr.Error()
		}
	}
	if err := d.e.Store.UpdateRun(bg, d.run); err != nil {
		return errors.Join(loopErr, err)
	}
	d.e.event(bg, d.run, search.EventStop, fmt.Sprintf("%s: %s", d.run.Status, d.run.StopReason), nil)
	return loopErr
}

func (d *driver) loop(ctx context.Context) error {
	// Nodes left unfinished by a killed process were in flight: evaluate
	// them now (the only evaluations a crash may repeat).
	for _, n := range d.g.Nodes {
		if !n.State.Finished() {
			if err := d.evaluate(ctx, n); err != nil {
				return err
			}
		}
	}
	if d.g.EvalCount() == 0 {
		d.report(nil)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if cur, err := d.e.Store.Run(ctx, d.run.ID); err == nil && cur.Status == search.RunStopped {
			return nil
		}
		p := d.progress()
		if stop, why := d.term.Stop(p); stop {
			d.run.Status, d.run.StopReason = search.RunDone, why
			return nil
		}
		if d.dupRun >= d.cfg.MaxDuplicates {
			d.run.Status, d.run.StopReason = search.RunDone, fmt.Sprintf("the operator proposed %d already-evaluated kernels in a row", d.dupRun)
			return nil
		}
		if a := d.sup.Check(p, d.polName, d.g); a != nil {
			d.apply(ctx, a)
		}
		sel, err := d.selectParent()
		if errors.Is(err, policy.ErrNoOpenNode) {
			return d.noOpenNode()
		}
		if err != nil {
			return err
		}
		if err := d.step(ctx, sel); err != nil {
			return err
		}
	}
}

// noOpenNode is the loop's answer when the policy finds no node to expand
// and nothing is in flight: done when something was evaluated, an error
// saying why when nothing could be.
func (d *driver) noOpenNode() error {
	if d.g.EvalCount() == 0 {
		// Nothing was ever evaluated: say why, not "exhausted".
		why := "no node could be evaluated"
		if r := d.g.Root(); r != nil && r.Error != "" {
			why = "the start kernel could not be evaluated: " + r.Error
		}
		return errors.New(why)
	}
	d.run.Status, d.run.StopReason = search.RunDone, "search space exhausted: the operator has nothing new to propose from any node"
	return nil
}

// step proposes a child of sel and evaluates it (d.mu held; released
// while the operator and the evaluator work). A non-nil error ends the run.
func (d *driver) step(ctx context.Context, sel search.Selection) error {
	n, err := d.propose(ctx, sel)
	if err != nil {
		if errors.Is(err, search.ErrExhausted) {
			for _, id := range sel.Parents {
				d.g.Closed[id] = true
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.proposeFails++
		d.e.event(ctx, d.run, search.EventProposeErr, fmt.Sprintf("operator %s failed on node %v: %v", d.run.Operator, sel.Parents, err), nil)
		if errors.Is(err, search.ErrOperatorUnavailable) {
			return err
		}
		if d.proposeFails >= maxProposeFailures {
			return fmt.Errorf("operator %s failed %d times in a row; last: %w", d.run.Operator, d.proposeFails, err)
		}
		return nil
	}
	d.proposeFails = 0
	if err := d.evaluate(ctx, n); err != nil {
		return err
	}
	if n.DuplicateOf != 0 {
		d.dupRun++
	} else {
		d.dupRun = 0
	}
	return nil
}

func (d *driver) apply(ctx context.Context, a *termination.Action) {
	if a.SwitchPolicy != "" {
		if p, err := policy.ByName(a.SwitchPolicy, d.cfg.Policy); err == nil {
			d.pol, d.polName = p, a.SwitchPolicy
			d.run.Policy = a.SwitchPolicy
			d.e.Store.UpdateRun(ctx, d.run)
		}
	}
	if a.ResetTo != 0 {
		d.pinned = a.ResetTo
	}
	d.e.event(ctx, d.run, search.EventSupervisor, a.Why, a)
}

func (d *driver) selectParent() (search.Selection, error) {
	if d.pinned != 0 {
		n := d.g.Node(d.pinned)
		d.pinned = 0
		if n != nil && d.g.Open(n) {
			return search.Selection{Parents: []int64{n.ID}, Island: n.Island, Why: "supervisor reset"}, nil
		}
	}
	rng := rand.New(rand.NewSource(d.run.Seed*1_000_003 + int64(len(d.g.Nodes))))
	return d.pol.Select(d.g, rng)
}

// propose asks the operator for a child of sel under its deadline and
// writes the new node (state evaluating) before returning it.
func (d *driver) propose(ctx context.Context, sel search.Selection) (*search.Node, error) {
	var parents []*search.Node
	depth := 0
	for _, id := range sel.Parents {
		p := d.g.Node(id)
		if p == nil {
			return nil, fmt.Errorf("policy selected unknown node %d", id)
		}
		parents = append(parents, p)
		depth = max(depth, p.Depth+1)
	}
	pctx, cancel := context.WithTimeout(ctx, d.e.Operator.Deadline())
	defer cancel()
	t0 := time.Now()
	oc := search.Context{Run: d.run, Problem: d.run.Problem, Parents: parents, Selection: sel,
		Graph: d.g, Budget: d.budgetState(), Memory: d.cfg.Memory, Seed: d.run.Seed*7_919 + int64(len(d.g.Nodes))}
	var prop search.Proposal
	var err error
	for retry := 0; ; retry++ {
		if d.parallel > 1 {
			oc = d.isolate(oc)
		}
		d.mu.Unlock()
		prop, err = d.callOperator(pctx, oc)
		d.mu.Lock()
		// A free operator (the tuner) that another slot beat to the same
		// variant while both worked from the same graph is asked again,
		// now that the other slot's node is in the graph; a costly one's
		// repeat is answered from the store instead.
		if err != nil || d.parallel <= 1 || prop.Tokens > 0 || retry >= d.parallel || !d.unseenDuplicate(oc.Graph, prop.Code) {
			break
		}
	}
	opS := time.Since(t0).Seconds()
	if err != nil {
		if pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("operator deadline of %s exceeded: %w", d.e.Operator.Deadline(), err)
		}
		if ctx.Err() == nil && !errors.Is(err, search.ErrExhausted) {
			d.recordFailedProposal(ctx, sel, parents[0], depth, err, opS)
		}
		return nil, err
	}
	if strings.TrimSpace(prop.Code) == "" {
		return nil, errors.New("operator proposed empty code")
	}
	lang := prop.Language
	if lang == "" {
		lang = parents[0].Language
	}
	notes := prop.Notes
	if sel.Draft {
		notes = strings.TrimSpace("draft: " + notes)
	}
	n := &search.Node{RunID: d.run.ID, Parents: sel.Parents, Depth: depth, Island: sel.Island, Code: prop.Code, Language: lang,
		Operator: d.e.Operator.Name(), OperatorInput: prop.Inputs, State: search.NodeEvaluating, Notes: notes,
		Cost: search.Cost{OperatorS: opS, Tokens: prop.Tokens, Rejected: len(prop.Rejected), RejectedTokens: search.RejectedTokens(prop.Rejected)}}
	if err := d.e.Store.InsertNode(ctx, n); err != nil {
		return nil, err
	}
	d.g.Add(n)
	d.recordRejected(ctx, sel, prop.Rejected)
	return n, nil
}

// recordRejected stores the proposals the operator's wrapper turned away
// before its answer (their tokens are in the answer's node already). A
// store error loses only the record, so it is logged.
func (d *driver) recordRejected(ctx context.Context, sel search.Selection, rs []search.RejectedProposal) {
	for i := range rs {
		r := rs[i]
		r.RunID, r.Parents, r.Operator = d.run.ID, sel.Parents, d.e.Operator.Name()
		if err := d.e.Store.InsertRejected(context.WithoutCancel(ctx), &r); err != nil {
			d.e.log().Warn("rejected proposal not recorded", "run", d.run.ID, "err", err)
		}
	}
}

const failedProposalNote = "failed proposal"

// recordFailedProposal writes a failed proposal as a failed node (the
// parent's code, the error as its reason, the operator's inputs and
// tokens when it gave them in a search.ProposalError): its cost counts
// against the budget and an operator that learns from the graph (the
// openai bandit) sees it after a resume. It is never selected or
// evaluated. A store error here only loses this record, so it is logged.
func (d *driver) recordFailedProposal(ctx context.Context, sel search.Selection, parent *search.Node, depth int, err error, opS float64) {
	n := &search.Node{RunID: d.run.ID, Parents: sel.Parents, Depth: depth, Island: sel.Island, Code: parent.Code, Language: parent.Language,
		Operator: d.e.Operator.Name(), State: search.NodeEvaluating, Notes: failedProposalNote, Cost: search.Cost{OperatorS: opS}}
	var pe *search.ProposalError
	if errors.As(err, &pe) {
		n.OperatorInput, n.Cost.Tokens = pe.Inputs, pe.Tokens
		n.Cost.Rejected, n.Cost.RejectedTokens = len(pe.Rejected), search.RejectedTokens(pe.Rejected)
	}
	if ierr := d.e.Store.InsertNode(ctx, n); ierr != nil {
		d.e.log().Warn("failed proposal not recorded", "run", d.run.ID, "err", ierr)
		return
	}
	d.g.Add(n)
	if pe != nil {
		d.recordRejected(ctx, sel, pe.Rejected)
	}
	n.State, n.Error = search.NodeFailed, err.Error()
	if ferr := d.e.Store.FinishNode(context.WithoutCancel(ctx), n, d.run); ferr != nil {
		d.e.log().Warn("failed proposal not recorded", "run", d.run.ID, "err", ferr)
	}
}

// evaluate answers n from the store when its code was evaluated before,
// else through the evaluator, and writes the result.
func (d *driver) evaluate(ctx context.Context, n *search.Node) error {
	if d.g.Node(n.ID) == nil {
		d.g.Add(n)
	}
	if n.Hash == "" {
		n.Hash = search.NormalizedHash(n.Code)
	}
	dup, err := d.e.Store.EvaluatedByHash(ctx, d.run.ID, d.run.Problem.Key(), n.Hash)
	if err != nil {
		return err
	}
	start := len(n.Parents) == 0
	if start && dup != nil && dup.RunID != d.run.ID {
		// The start node's timing is the run's baseline: measured in this
		// run, not taken from an earlier run's node.
		dup = nil
	}
	for dup == nil {
		// The same code in flight in another slot: wait for its result
		// rather than evaluate it twice.
		busy, ok := d.evaluating[n.Hash]
		if !ok {
			break
		}
		d.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
		}
		d.mu.Lock()
		if ctx.Err() != nil {
			return ctx.Err() // left evaluating: resume answers it
		}
		if dup, err = d.e.Store.EvaluatedByHash(ctx, d.run.ID, d.run.Problem.Key(), n.Hash); err != nil {
			return err
		}
	}
	if dup != nil && dup.ID != n.ID {
		res := *dup.Result
		res.Fitness = d.fitness(&res)
		n.Result, n.State, n.DuplicateOf = &res, search.NodeDone, dup.ID
		return d.finishNode(ctx, n, search.EventDuplicate, fmt.Sprintf("node %d: same code as node %d (run %s), answered from the store", n.ID, dup.ID, dup.RunID))
	}
	if n.State != search.NodeEvaluating {
		if err := d.e.Store.SetNodeState(ctx, n.ID, search.NodeEvaluating); err != nil {
			return err
		}
		n.State = search.NodeEvaluating
	}
	busy := make(chan struct{})
	d.evaluating[n.Hash] = busy
	defer func() { delete(d.evaluating, n.Hash); close(busy) }() // d.mu is held again by then
	t0 := time.Now()
	problem := d.run.Problem
	d.mu.Unlock()
	res, err := d.measure(ctx, problem, n.Code, start)
	d.mu.Lock()
	evalS := time.Since(t0).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // in flight: left evaluating, resume re-evaluates it
		}
		n.State, n.Error, n.Cost.EvalS = search.NodeFailed, err.Error(), evalS
		if ferr := d.finishNode(ctx, n, search.EventEvalErr, fmt.Sprintf("node %d: the evaluation service failed: %v", n.ID, err)); ferr != nil {
			return ferr
		}
		if d.recentFailures() >= maxEvalFailures {
			return fmt.Errorf("the evaluation service failed %d times in a row; last: %w", maxEvalFailures, err)
		}
		return nil
	}
	d.evalWall += evalS
	d.evalCount++
	res.Fitness = d.fitness(res)
	n.Result, n.State, n.Cost.EvalS = res, search.NodeDone, evalS
	return d.finishNode(ctx, n, search.EventEvaluated, describe(n))
}

// measure evaluates code; the start node fresh, never from the
// evaluation service's cache, where the service can tell them apart, and
// without the torch.compile timing where the run's fitness does not need
// it from the start (search.StartEvaluator).
func (d *driver) measure(ctx context.Context, p search.Problem, code string, start bool) (*search.Result, error) {
	if !start {
		return d.e.Eval.Evaluate(ctx, p, code)
	}
	if se, ok := d.e.Eval.(search.StartEvaluator); ok {
		return se.EvaluateStart(ctx, p, code, d.run.Baseline == search.BaselineCompile || d.run.Budget.Evals == 1)
	}
	if fe, ok := d.e.Eval.(search.FreshEvaluator); ok {
		return fe.EvaluateFresh(ctx, p, code)
	}
	return d.e.Eval.Evaluate(ctx, p, code)
}

// recentFailures counts the evaluation service's failures at the end of
// the graph; failed proposals (recordFailedProposal) are the operator's,
// not the service's, and nodes still in flight in other slots are passed
// over.
func (d *driver) recentFailures() int {
	k := 0
	for i := len(d.g.Nodes) - 1; i >= 0; i-- {
		n := d.g.Nodes[i]
		if !n.State.Finished() {
			continue
		}
		if n.State != search.NodeFailed {
			break
		}
		if n.Notes != failedProposalNote {
			k++
		}
	}
	return k
}

func describe(n *search.Node) string {
	r := n.Result
	s := fmt.Sprintf("node %d: %s", n.ID, r.Verdict)
	if r.Verdict == search.VerdictPass {
		s += fmt.Sprintf(", %.3g s, fitness %.3f", r.TimeS, r.Fitness)
		if r.Noisy {
			s += " (noisy timing: " + r.NoisyWhy + ")"
		}
	} else if fc := r.FailedChecks(); len(fc) > 0 {
		s += " (" + fc[0].Name + ")"
	}
	if n.Notes != "" {
		s += " — " + n.Notes
	}
	return s
}

// finishNode writes n's end state together with the run's best node and
// elapsed time.
func (d *driver) finishNode(ctx context.Context, n *search.Node, kind, msg string) error {
	prevBest := d.run.BestNode
	d.run.ElapsedS = d.elapsed()
	if b := bestOf(d.g); b != nil {
		d.run.BestNode = b.ID
	}
	if err := d.e.Store.FinishNode(context.WithoutCancel(ctx), n, d.run); err != nil {
		return err
	}
	d.e.event(ctx, d.run, kind, msg, nil)
	if d.run.BestNode != prevBest && d.run.BestNode == n.ID {
		d.e.event(ctx, d.run, search.EventNewBest, fmt.Sprintf("new best: node %d, fitness %.3f", n.ID, n.Fitness()), nil)
	}
	d.report(n)
	return nil
}

func bestOf(g *search.Graph) *search.Node { return g.Best() }

// progress derives the termination rules' view from the graph.
func (d *driver) progress() search.Progress {
	p := search.Progress{Elapsed: time.Duration(d.elapsed() * float64(time.Second))}
	bestF := 0.0
	finished := []*search.Node{}
	for _, n := range d.g.Nodes {
		p.Tokens += n.Cost.Tokens
		if n.State == search.NodeDone {
			if n.DuplicateOf == 0 {
				p.Evals++
			}
			finished = append(finished, n)
		}
	}
	// SinceBest: finished nodes (duplicates included) after the best one,
	// in evaluation order.
	sortByEvalSeq(finished)
	for _, n := range finished {
		if n.Fitness() > bestF {
			bestF = n.Fitness()
			p.SinceBest = 0
			p.BestTimeS = n.Result.TimeS
		} else {
			p.SinceBest++
		}
		if n.Result != nil && n.Result.SOLSeconds > 0 {
			p.SOLSeconds = n.Result.SOLSeconds
		}
	}
	p.BestFitness = bestF
	return p
}

func (d *driver) budgetState() search.BudgetState {
	p := d.progress()
	return search.BudgetState{Evals: p.Evals, EvalLimit: d.run.Budget.Evals, ElapsedS: p.Elapsed.Seconds(),
		TimeLimitS: d.run.Budget.Time.Seconds(), Tokens: p.Tokens, TokenLimit: d.run.Budget.Tokens}
}

func (d *driver) report(last *search.Node) {
	if d.e.OnProgress == nil {
		return
	}
	p := d.progress()
	st := Status{Run: d.run, Progress: p, Summary: search.Summarize(d.run, d.g.Nodes), Last: last}
	if d.evalCount > 0 {
		per := time.Duration(float64(time.Since(d.t0)) / float64(d.evalCount))
		var eta time.Duration
		if b := d.run.Budget.Evals; b > 0 && b > p.Evals {
			eta = per * time.Duration(b-p.Evals)
		}
		if t := d.run.Budget.Time; t > 0 {
			if left := t - p.Elapsed; left > 0 && (eta == 0 || left < eta) {
				eta = left
			}
		}
		st.ETA = eta
	}
	d.e.OnProgress(st)
}

// fitness is the speedup over the run's baseline measured in the same
// evaluation as the kernel (search.Fitness), so that it is the result's own
// speedup_vs_eager (or _vs_compile) and two nodes rank as their reported
// speedups do. Anchoring it to the start's single baseline sample instead
// made every fitness differ from the speedup it stood beside, and ranked a
// 23.0x kernel above a 23.9x one (issue 36).
func (d *driver) fitness(r *search.Result) float64 {
	return search.Fitness(r, d.run.Baseline)
}

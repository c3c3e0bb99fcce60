package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/policy"
)

// loopParallel is loop with up to d.parallel (select → propose → evaluate)
// slots in flight. It runs with d.mu held; a slot takes d.mu too and gives
// it up only while its operator or evaluator works, so every decision
// (selection, budget, termination, supervisor, node writes) sees the graph
// as it stands, pending nodes included: a pending node's code counts as
// tried for the operator, and a slot whose proposal repeats code still in
// flight waits for that result and is answered from the store.
//
// Budgets: a slot reserves one evaluation when it starts (the termination
// rules see finished evaluations plus the slots in flight), so the eval
// budget is never exceeded; a slot that ends without an evaluation (a
// failed proposal, a duplicate) gives its unit back. The run ends only
// once no slot is in flight, so the store never holds a finished run with
// a node still evaluating, except after a kill, where resume evaluates
// those (at most d.parallel) nodes first.
func (d *driver) loopParallel(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, d.parallel)
	inflight := 0
	var fatal error
	start := func(f func(context.Context) error) {
		inflight++
		go func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			done <- f(sctx)
		}()
	}
	// wait gives d.mu up until a slot ends; the first slot error ends the
	// run and cancels the others (their nodes stay in flight for resume).
	wait := func() {
		d.mu.Unlock()
		err := <-done
		d.mu.Lock()
		inflight--
		if err != nil && fatal == nil {
			fatal = err
			cancel()
		}
	}
	drain := func() {
		for inflight > 0 {
			wait()
		}
	}
	// Nodes left unfinished by a killed process were in flight: evaluate
	// them first (the only evaluations a crash may repeat).
	var resumed []*search.Node
	for _, n := range d.g.Nodes {
		if !n.State.Finished() {
			resumed = append(resumed, n)
		}
	}
	if d.g.EvalCount() == 0 {
		d.report(nil)
	}
	for {
		if fatal == nil && ctx.Err() != nil {
			fatal = ctx.Err()
		}
		if fatal != nil {
			drain()
			return fatal
		}
		if inflight >= d.parallel {
			wait()
			continue
		}
		if len(resumed) > 0 {
			n := resumed[0]
			resumed = resumed[1:]
			start(func(c context.Context) error { return d.evaluate(c, n) })
			continue
		}
		if cur, err := d.e.Store.Run(ctx, d.run.ID); err == nil && cur.Status == search.RunStopped {
			drain()
			return fatal
		}
		p := d.progress()
		reserved := p
		reserved.Evals += inflight
		if stop, why := d.term.Stop(reserved); stop {
			if inflight > 0 {
				wait() // the slots in flight may give their units back
				continue
			}
			d.run.Status, d.run.StopReason = search.RunDone, why
			return nil
		}
		if d.dupRun >= d.cfg.MaxDuplicates {
			if inflight > 0 {
				wait()
				continue
			}
			d.run.Status, d.run.StopReason = search.RunDone, fmt.Sprintf("the operator proposed %d already-evaluated kernels in a row", d.dupRun)
			return nil
		}
		if a := d.sup.Check(p, d.polName, d.g); a != nil {
			d.apply(ctx, a)
		}
		sel, err := d.selectParent()
		if errors.Is(err, policy.ErrNoOpenNode) {
			if inflight > 0 {
				wait() // a node in flight may open new ground
				continue
			}
			return d.noOpenNode()
		}
		if err != nil {
			fatal = err
			continue
		}
		start(func(c context.Context) error { return d.step(c, sel) })
	}
}

// isolate gives an operator that runs beside other slots its own copy of
// the graph, the run and the parents (d.mu held): the slots go on changing
// the shared ones while it works.
func (d *driver) isolate(c search.Context) search.Context {
	nodes := make([]*search.Node, len(d.g.Nodes))
	for i, n := range d.g.Nodes {
		cp := *n
		nodes[i] = &cp
	}
	g := search.NewGraph(nodes)
	for id, closed := range d.g.Closed {
		g.Closed[id] = closed
	}
	run := *d.run
	c.Run, c.Graph = &run, g
	c.Parents = make([]*search.Node, len(c.Parents))
	for i, id := range c.Selection.Parents {
		c.Parents[i] = g.Node(id)
	}
	return c
}

// callOperator runs Propose under its deadline. With several slots, an
// operator that ignores its context is left behind at the deadline (it
// works on its own copy, isolate), so it holds only its slot.
func (d *driver) callOperator(pctx context.Context, c search.Context) (search.Proposal, error) {
	if d.parallel <= 1 {
		return d.e.Operator.Propose(pctx, c)
	}
	type answer struct {
		p   search.Proposal
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		p, err := d.e.Operator.Propose(pctx, c)
		ch <- answer{p, err}
	}()
	select {
	case a := <-ch:
		return a.p, a.err
	case <-pctx.Done():
		return search.Proposal{}, pctx.Err()
	}
}

// unseenDuplicate says whether code repeats a node that another slot added
// after seen (the operator's copy of the graph) was taken.
func (d *driver) unseenDuplicate(seen *search.Graph, code string) bool {
	h := search.NormalizedHash(code)
	for i := len(d.g.Nodes) - 1; i >= 0; i-- {
		n := d.g.Nodes[i]
		if seen.Node(n.ID) != nil {
			break
		}
		nh := n.Hash
		if nh == "" {
			nh = search.NormalizedHash(n.Code)
		}
		if nh == h && n.Notes != failedProposalNote {
			return true
		}
	}
	return false
}

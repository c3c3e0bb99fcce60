package engine

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// pacedLandscape is the landscape with a fixed evaluation time; it records
// how many evaluations ran at once.
type pacedLandscape struct {
	landscape
	pace            time.Duration
	now, maxAtATime atomic.Int64
}

func (p *pacedLandscape) Evaluate(ctx context.Context, pr search.Problem, code string) (*search.Result, error) {
	k := p.now.Add(1)
	defer p.now.Add(-1)
	for {
		m := p.maxAtATime.Load()
		if k <= m || p.maxAtATime.CompareAndSwap(m, k) {
			break
		}
	}
	select {
	case <-time.After(p.pace):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.landscape.Evaluate(ctx, pr, code)
}

type parallelOutcome struct {
	run   *search.Run
	nodes []*search.Node
	wall  time.Duration
	ev    *pacedLandscape
}

func runPaced(t *testing.T, pol string, parallel, evals int, op search.Operator) parallelOutcome {
	t.Helper()
	ev := &pacedLandscape{pace: 60 * time.Millisecond}
	e, st := newTestEngine(t, ev)
	e.Parallel = parallel
	if op != nil {
		e.Operator = op
	}
	t0 := time.Now()
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("par"), StartCode: startCode(4, 4), Policy: pol,
		Config: Config{Policy: policyConfigForTest(pol)}, Budget: search.Budget{Evals: evals}, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	run, _ = st.Run(context.Background(), run.ID)
	nodes, _ := st.Nodes(context.Background(), run.ID)
	return parallelOutcome{run, nodes, wall, ev}
}

// checkExact: the run is done, spent exactly its evaluation budget (each
// evaluation of the service is one done, non-duplicate node), left
// nothing in flight and has an unbroken evaluation order.
func checkExact(t *testing.T, o parallelOutcome, evals int) {
	t.Helper()
	if o.run.Status != search.RunDone {
		t.Fatalf("status %s (%s)", o.run.Status, o.run.StopReason)
	}
	done, seqs := 0, map[int]bool{}
	for _, n := range o.nodes {
		if !n.State.Finished() {
			t.Fatalf("node %d left %s in a finished run", n.ID, n.State)
		}
		if n.State == search.NodeDone {
			if seqs[n.EvalSeq] || n.EvalSeq <= 0 {
				t.Fatalf("node %d: eval seq %d repeated or missing", n.ID, n.EvalSeq)
			}
			seqs[n.EvalSeq] = true
			if n.DuplicateOf == 0 {
				done++
			}
		}
	}
	if done != evals || int(o.ev.calls.Load()) != evals {
		t.Fatalf("%d evaluations recorded, %d made; budget %d", done, o.ev.calls.Load(), evals)
	}
}

func TestParallelSlotsTripleThroughputWithExactBudget(t *testing.T) {
	const evals = 19
	for _, pol := range []string{"greedy", "uct", "evolve"} {
		t.Run(pol, func(t *testing.T) {
			one := runPaced(t, pol, 1, evals, nil)
			three := runPaced(t, pol, 3, evals, nil)
			checkExact(t, one, evals)
			checkExact(t, three, evals)
			if m := one.ev.maxAtATime.Load(); m != 1 {
				t.Fatalf("Parallel=1 ran %d evaluations at once", m)
			}
			if m := three.ev.maxAtATime.Load(); m != 3 {
				t.Fatalf("Parallel=3 ran at most %d evaluations at once, want 3", m)
			}
			// The root is evaluated alone, then three at a time: 19 evaluations
			// take 1+6 paces instead of 19 (2.7x); allow for a loaded machine.
			speedup := float64(one.wall) / float64(three.wall)
			t.Logf("%s: 1 slot %v, 3 slots %v: %.2fx", pol, one.wall.Round(time.Millisecond), three.wall.Round(time.Millisecond), speedup)
			if speedup < 2 {
				t.Fatalf("3 slots only %.2fx faster than 1", speedup)
			}
			// Slots never evaluate the same code twice: a variant pending in
			// one slot counts as tried for the others.
			hashes := map[string]int64{}
			for _, n := range three.nodes {
				if n.DuplicateOf != 0 {
					t.Errorf("node %d duplicates node %d", n.ID, n.DuplicateOf)
				}
				if prev, ok := hashes[n.Hash]; ok && n.Notes != failedProposalNote {
					t.Errorf("nodes %d and %d have the same code", prev, n.ID)
				}
				hashes[n.Hash] = n.ID
			}
			// The start (4,4) is worth 2x; the search still climbs (the order in
			// which slots finish varies, so which peak it reaches may too).
			if best := search.NewGraph(three.nodes).Best(); best == nil || best.Fitness() <= 2+1e-9 {
				t.Fatalf("3 slots never improved on the start kernel: best %v", best)
			}
		})
	}
}

// hangingOperator is the tuner except for its hangAt-th proposal, which
// never returns on its own (it ignores its context until the test ends).
type hangingOperator struct {
	search.Operator
	hangAt   int64
	deadline time.Duration
	calls    atomic.Int64
	release  chan struct{}
	evalsAt  atomic.Int64 // evaluations finished when the hung one was given up
	counter  func() int64
}

func (h *hangingOperator) Deadline() time.Duration { return h.deadline }

func (h *hangingOperator) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	if h.calls.Add(1) == h.hangAt {
		<-ctx.Done()
		h.evalsAt.Store(h.counter())
		<-h.release
		return search.Proposal{}, ctx.Err()
	}
	return h.Operator.Propose(ctx, c)
}

func TestHangingOperatorHoldsOnlyItsSlot(t *testing.T) {
	const evals = 14
	ev := &pacedLandscape{pace: 40 * time.Millisecond}
	op := &hangingOperator{Operator: newTunerForTest(), hangAt: 2, deadline: 1500 * time.Millisecond, release: make(chan struct{}),
		counter: func() int64 { return ev.calls.Load() }}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(op.release) }) })
	e, st := newTestEngine(t, ev)
	e.Operator, e.Parallel = op, 3
	t0 := time.Now()
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("hang"), StartCode: startCode(4, 4), Policy: "greedy",
		Budget: search.Budget{Evals: evals}, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	run, _ = st.Run(context.Background(), run.ID)
	nodes, _ := st.Nodes(context.Background(), run.ID)
	checkExact(t, parallelOutcome{run: run, nodes: nodes, ev: ev}, evals)
	// While one slot waited out its operator's deadline the other two went
	// on: about 1.5 s / 40 ms per evaluation over two slots, far more than
	// the two or three a blocked loop would have done.
	if k := op.evalsAt.Load(); k < 8 {
		t.Fatalf("only %d evaluations finished while one operator hung for %v", k, op.deadline)
	}
	failed := 0
	for _, n := range nodes {
		if n.Notes == failedProposalNote {
			failed++
			if !strings.Contains(n.Error, "deadline") {
				t.Fatalf("failed proposal's reason %q does not name the deadline", n.Error)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed proposals recorded, want the hung one", failed)
	}
	t.Logf("%d evaluations in %v; %d finished while the operator hung", evals, wall.Round(time.Millisecond), op.evalsAt.Load())
}

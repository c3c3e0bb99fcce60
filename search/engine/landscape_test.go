package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/policy"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// landscape is a synthetic fitness surface over two tunables A and B in
// 0..9, evaluated without Python: a broad local peak at (2,2) worth 3x and
// a narrow global one at (8,7) worth 6x; odd A with B == 0 is "incorrect".
type landscape struct{ calls atomic.Int64 }

var abRe = regexp.MustCompile(`(?m)^(A|B) = (\d+)`)

func (l *landscape) f(a, b int) float64 {
	p1 := 3 - 0.25*float64(abs(a-2)+abs(b-2))
	p2 := 6 - 1.0*float64(abs(a-8)+abs(b-7))
	return math.Max(0.2, math.Max(p1, p2))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (l *landscape) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	l.calls.Add(1)
	v := map[string]int{}
	for _, m := range abRe.FindAllStringSubmatch(code, -1) {
		v[m[1]], _ = strconv.Atoi(m[2])
	}
	a, b := v["A"], v["B"]
	if a%2 == 1 && b == 0 {
		return &search.Result{Verdict: search.VerdictIncorrect, Checks: []search.Check{{Name: "allclose", Detail: "max abs err 3"}}}, nil
	}
	f := l.f(a, b)
	return &search.Result{Verdict: search.VerdictPass, Correct: true, TimeS: 1e-3 / f, EagerS: 1e-3, SOLSeconds: 1e-4}, nil
}

func startCode(a, b int) string {
	return fmt.Sprintf("A = %d\nB = %d\nTUNABLES = {\"A\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], \"B\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\nclass ModelNew: pass\n", a, b)
}

func newTestEngine(t *testing.T, ev search.Evaluator) (*Engine, *store.SQLite) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return &Engine{Store: st, Eval: ev, Operator: tuner.New()}, st
}

func synthProblem(name string) search.Problem {
	return search.Problem{Name: name, ReferencePath: "/synthetic/" + name + ".py", Target: "cpu", Language: "c"}
}

func runSynthetic(t *testing.T, pol string, cfg Config, evals int, seed int64) (*search.Run, []*search.Node, *landscape) {
	t.Helper()
	l := &landscape{}
	e, st := newTestEngine(t, l)
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("synth"), StartCode: startCode(4, 4), Policy: pol, Config: cfg,
		Budget: search.Budget{Evals: evals}, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	run, _ = st.Run(context.Background(), run.ID)
	nodes, _ := st.Nodes(context.Background(), run.ID)
	return run, nodes, l
}

func TestGreedyClimbsToTheNearestPeak(t *testing.T) {
	run, nodes, l := runSynthetic(t, "greedy", Config{}, 30, 1)
	if run.Status != search.RunDone || len(nodes) != 30 || l.calls.Load() != 30 {
		t.Fatalf("status %s (%s), %d nodes, %d evaluations", run.Status, run.StopReason, len(nodes), l.calls.Load())
	}
	g := search.NewGraph(nodes)
	best := g.Best()
	// From (4,4) the broad peak at (2,2) is uphill; greedy reaches it.
	if best.Fitness() < 3-1e-9 {
		t.Fatalf("greedy best %.3f, want the local peak 3", best.Fitness())
	}
	// Every parent greedy picked was the best node when its child was made.
	for _, n := range nodes[1:] {
		bestThen := search.NewGraph(nodesBefore(nodes, n.ID)).Best()
		if bestThen != nil && n.Parents[0] != bestThen.ID {
			p := g.Node(n.Parents[0])
			if p.Fitness() != bestThen.Fitness() {
				t.Fatalf("node %d: parent %d (%.3f) is not the best then (%d, %.3f)", n.ID, p.ID, p.Fitness(), bestThen.ID, bestThen.Fitness())
			}
		}
	}
}

func nodesBefore(nodes []*search.Node, id int64) []*search.Node {
	var out []*search.Node
	for _, n := range nodes {
		if n.ID < id {
			out = append(out, n)
		}
	}
	return out
}

func TestUCTBacksUpRewardsAndExplores(t *testing.T) {
	run, nodes, _ := runSynthetic(t, "uct", Config{Policy: policy.Config{Draft: 4}}, 40, 3)
	if run.Status != search.RunDone {
		t.Fatalf("status %s: %s", run.Status, run.StopReason)
	}
	g := search.NewGraph(nodes)
	root := g.Root()
	// Draft phase: the first four children are the root's.
	for _, n := range nodes[1:5] {
		if n.Parents[0] != root.ID || n.Depth != 1 {
			t.Fatalf("draft node %d has parent %v", n.ID, n.Parents)
		}
	}
	// UCT expands several subtrees, not just one lineage, and goes deep.
	expanded, maxDepth := 0, 0
	for _, c := range g.Children(root.ID) {
		if len(g.Children(c.ID)) > 0 {
			expanded++
		}
	}
	for _, n := range nodes {
		maxDepth = max(maxDepth, n.Depth)
	}
	if expanded < 2 || maxDepth < 3 {
		t.Fatalf("uct expanded %d root subtrees, max depth %d", expanded, maxDepth)
	}
	if g.Best().Fitness() < 3 {
		t.Fatalf("uct best %.3f", g.Best().Fitness())
	}
}

func TestEvolveIslandsStayDistinct(t *testing.T) {
	const k = 3
	cfg := Config{Policy: policy.Config{Draft: k, Islands: k, MigrateEvery: 10}}
	run, nodes, _ := runSynthetic(t, "evolve", cfg, 60, 5)
	if run.Status != search.RunDone {
		t.Fatalf("status %s: %s", run.Status, run.StopReason)
	}
	g := search.NewGraph(nodes)
	// Each island's own nodes descend mostly from its own draft seed: the
	// lineage root (first node at depth 1 on the chain) is the island's.
	seedOf := map[int64]int{} // draft node -> island
	for _, n := range nodes {
		if n.Depth == 1 {
			seedOf[n.ID] = n.Island
		}
	}
	if len(seedOf) != k {
		t.Fatalf("%d drafts, want %d", len(seedOf), k)
	}
	own, total := map[int]int{}, map[int]int{}
	migrantChildren := 0
	for _, n := range nodes {
		if n.Depth < 2 {
			continue
		}
		total[n.Island]++
		chain := append([]*search.Node{n}, g.Ancestors(n.ID)...)
		for _, a := range chain {
			if a.Depth == 1 && seedOf[a.ID] == n.Island {
				own[n.Island]++
			}
		}
		if p := g.Node(n.Parents[0]); p.Island != n.Island {
			migrantChildren++
		}
	}
	for i := 0; i < k; i++ {
		if total[i] < 5 {
			t.Fatalf("island %d has %d nodes: islands must all be worked", i, total[i])
		}
		if frac := float64(own[i]) / float64(total[i]); frac < 0.5 {
			t.Errorf("island %d: only %.0f%% of its nodes descend from its own seed: islands collapsed", i, frac*100)
		}
	}
	// The islands' own populations stay different kernels.
	bests := map[string]int{}
	for i := 0; i < k; i++ {
		var b *search.Node
		for _, n := range nodes {
			if n.Island == i && n.Depth > 0 && (b == nil || n.Fitness() > b.Fitness()) {
				b = n
			}
		}
		bests[b.Hash]++
	}
	if len(bests) < 2 {
		t.Error("every island's best is the same kernel: islands collapsed")
	}
	if migrantChildren == 0 {
		t.Error("no node was derived from a migrant: ring migration never happened")
	}
	// Parent weighting: a node's weight falls with its child count.
	ev := policy.Evolve{Islands: k}
	pop := ev.Population(g, 0)
	w := ev.Weights(g, pop)
	for i := range pop {
		for j := range pop {
			if pop[i].Fitness() == pop[j].Fitness() && len(g.Children(pop[i].ID)) < len(g.Children(pop[j].ID)) && w[i] <= w[j] {
				t.Fatalf("equal fitness, fewer children must weigh more: %v vs %v", w[i], w[j])
			}
		}
	}
}

// Duplicate code is answered from the store: a second run of the same
// problem with the same seed proposes the same kernels and evaluates none
// of them; its start node alone is measured again (a run's baseline is
// measured in the run, issue 20).
func TestDuplicatesAnsweredFromStore(t *testing.T) {
	l := &landscape{}
	e, st := newTestEngine(t, l)
	o := StartOptions{Problem: synthProblem("dup"), StartCode: startCode(4, 4), Policy: "greedy", Budget: search.Budget{Evals: 8}, Seed: 11}
	if _, err := e.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	first := l.calls.Load()
	o.Budget = search.Budget{Evals: 8, Plateau: 100}
	run2, err := e.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := st.Nodes(context.Background(), run2.ID)
	dups := 0
	for _, n := range nodes {
		if n.DuplicateOf != 0 {
			dups++
			if n.Result == nil || n.Result.Verdict == "" {
				t.Fatalf("duplicate node %d has no result", n.ID)
			}
		}
	}
	if nodes[0].DuplicateOf != 0 || nodes[0].Result == nil {
		t.Fatalf("the second run's start node was answered from the first run's (%d)", nodes[0].DuplicateOf)
	}
	if dups < 7 {
		t.Fatalf("second run: %d duplicates", dups)
	}
	if l.calls.Load() > first+int64(len(nodes)-dups) {
		t.Fatalf("duplicates were evaluated: %d calls after %d", l.calls.Load(), first)
	}
}

func TestTerminationRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget search.Budget
		want   string
		maxN   int
	}{
		{"target speedup", search.Budget{Evals: 50, TargetSpeedup: 2.5}, "target speedup", 49},
		{"plateau", search.Budget{Evals: 100, Plateau: 6}, "plateau", 99},
		{"near SOL", search.Budget{Evals: 100, SOLEpsilon: 2}, "speed of light", 99},
		{"evaluations", search.Budget{Evals: 7}, "evaluation budget", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &landscape{}
			e, st := newTestEngine(t, l)
			run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("t"), StartCode: startCode(4, 4), Budget: tc.budget, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			run, _ = st.Run(context.Background(), run.ID)
			nodes, _ := st.Nodes(context.Background(), run.ID)
			if run.Status != search.RunDone || !strings.Contains(run.StopReason, tc.want) || len(nodes) > tc.maxN {
				t.Fatalf("status %s, reason %q, %d nodes", run.Status, run.StopReason, len(nodes))
			}
		})
	}
}

// The supervisor notices a plateau, resets to another lineage or switches
// policy, and says why in the event feed.
func TestSupervisorActsOnStagnation(t *testing.T) {
	l := &landscape{}
	e, st := newTestEngine(t, l)
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("s"), StartCode: startCode(4, 4), Policy: "greedy",
		Config: Config{SupervisorWindow: 5}, Budget: search.Budget{Evals: 45}, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := st.Events(context.Background(), run.ID, 0, 1000)
	acts := 0
	for _, ev := range evs {
		if ev.Kind == search.EventSupervisor {
			acts++
			if !strings.Contains(ev.Message, "stagnation") {
				t.Fatalf("supervisor event without its reason: %q", ev.Message)
			}
		}
	}
	if acts == 0 {
		t.Fatal("greedy stuck on the local peak for many evaluations, and the supervisor never acted")
	}
}

// Cancelling a drive pauses the run; Resume finishes it with exactly the
// budget's evaluations, none repeated.
func TestResumeAfterCancel(t *testing.T) {
	l := &landscape{}
	e, st := newTestEngine(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	e.OnProgress = func(s Status) {
		if s.Last != nil {
			if n++; n == 6 {
				cancel()
			}
		}
	}
	run, err := e.Run(ctx, StartOptions{Problem: synthProblem("r"), StartCode: startCode(4, 4), Budget: search.Budget{Evals: 15}, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.Run(context.Background(), run.ID)
	if got.Status != search.RunPaused {
		t.Fatalf("after cancel: %s", got.Status)
	}
	e.OnProgress = nil
	if err := e.Resume(context.Background(), run.ID, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Run(context.Background(), run.ID)
	nodes, _ := st.Nodes(context.Background(), run.ID)
	if got.Status != search.RunDone || len(nodes) != 15 || l.calls.Load() != 15 {
		t.Fatalf("status %s, %d nodes, %d evaluations", got.Status, len(nodes), l.calls.Load())
	}
	if err := e.Resume(context.Background(), run.ID, nil); err == nil {
		t.Fatal("resuming a finished run must say so")
	}
}

func newTunerForTest() search.Operator { return tuner.New() }

func policyConfigForTest(pol string) policy.Config {
	if pol == "evolve" {
		return policy.Config{Draft: 3, Islands: 3, MigrateEvery: 6}
	}
	if pol == "uct" {
		return policy.Config{Draft: 2}
	}
	return policy.Config{}
}

// One driver per run: a run claimed by a live driver elsewhere is refused
// with ErrRunBusy; one claimed by a dead process of this host is taken over.
func TestOneDriverPerRun(t *testing.T) {
	l := &landscape{}
	e, st := newTestEngine(t, l)
	ctx := context.Background()
	run, err := e.Create(ctx, StartOptions{Problem: synthProblem("lease"), StartCode: startCode(4, 4), Budget: search.Budget{Evals: 3}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AcquireRun(ctx, run.ID, "elsewhere:123:1", leaseStale, driverAlive); err != nil {
		t.Fatal(err)
	}
	if err := e.Drive(ctx, run.ID); !errors.Is(err, search.ErrRunBusy) {
		t.Fatalf("a run driven elsewhere: %v, want ErrRunBusy", err)
	}
	if l.calls.Load() != 0 {
		t.Fatal("a refused drive evaluated something")
	}
	// A dead local process (a pid that cannot exist) loses its claim at once.
	host, _ := os.Hostname()
	st.ReleaseRun(ctx, run.ID, "elsewhere:123:1")
	if err := st.AcquireRun(ctx, run.ID, fmt.Sprintf("%s:%d:1", host, 1<<22+12345), leaseStale, driverAlive); err != nil {
		t.Fatal(err)
	}
	if err := e.Drive(ctx, run.ID); err != nil {
		t.Fatalf("taking over from a dead driver: %v", err)
	}
	got, _ := st.Run(ctx, run.ID)
	if got.Status != search.RunDone || l.calls.Load() != 3 {
		t.Fatalf("status %s, %d evaluations", got.Status, l.calls.Load())
	}
}

type brokenService struct{}

func (brokenService) Evaluate(context.Context, search.Problem, string) (*search.Result, error) {
	return nil, errors.New("worker: no Python with torch")
}

// An evaluation service that cannot evaluate fails the run with its
// reason, after a few tries, rather than spinning or claiming exhaustion.
func TestServiceFailureFailsTheRun(t *testing.T) {
	e, st := newTestEngine(t, brokenService{})
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("broken"), StartCode: startCode(4, 4), Budget: search.Budget{Evals: 5}, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "no Python with torch") {
		t.Fatalf("err %v", err)
	}
	got, _ := st.Run(context.Background(), run.ID)
	if got.Status != search.RunFailed || !strings.Contains(got.StopReason, "no Python with torch") {
		t.Fatalf("status %s: %s", got.Status, got.StopReason)
	}
}

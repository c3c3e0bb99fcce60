package policy

import (
	"math/rand"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

func node(id, parent int64, f float64, island int) *search.Node {
	n := &search.Node{ID: id, Island: island, State: search.NodeDone, Result: &search.Result{Verdict: search.VerdictPass, Fitness: f}}
	if parent != 0 {
		n.Parents = []int64{parent}
		n.Depth = 1
	}
	return n
}

func TestByName(t *testing.T) {
	for _, name := range append(Names, "", "mcts", "islands") {
		if _, err := ByName(name, Config{}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, err := ByName("beam", Config{}); err == nil {
		t.Error("unknown policy accepted")
	}
	p, _ := ByName("uct", Config{Draft: 3})
	if _, ok := p.(Draft); !ok {
		t.Error("draft > 0 must wrap the policy in the draft phase")
	}
}

func TestGreedySkipsClosedNodes(t *testing.T) {
	g := search.NewGraph([]*search.Node{node(1, 0, 1, 0), node(2, 1, 3, 0), node(3, 1, 2, 0)})
	sel, _ := Greedy{}.Select(g, rand.New(rand.NewSource(1)))
	if sel.Parents[0] != 2 {
		t.Fatalf("greedy picked %v", sel.Parents)
	}
	g.Closed[2] = true
	sel, _ = Greedy{}.Select(g, rand.New(rand.NewSource(1)))
	if sel.Parents[0] != 3 {
		t.Fatalf("with node 2 closed greedy picked %v", sel.Parents)
	}
	g.Closed[1], g.Closed[3] = true, true
	if _, err := (Greedy{}).Select(g, rand.New(rand.NewSource(1))); err != ErrNoOpenNode {
		t.Fatalf("all closed: %v", err)
	}
}

// UCT prefers the subtree with the higher mean reward once both are
// visited, and explores a barely visited one over a well-visited one of
// equal value.
func TestUCTBackup(t *testing.T) {
	nodes := []*search.Node{node(1, 0, 1, 0), node(2, 1, 4, 0), node(3, 1, 1, 0)}
	id := int64(4)
	for i := 0; i < 6; i++ { // a well-visited, rewarding subtree under 2
		nodes = append(nodes, node(id, 2, 3.5, 0))
		id++
	}
	g := search.NewGraph(nodes)
	sel, err := UCT{C: 0.1}.Select(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Node(sel.Parents[0]); p.ID == 3 || p.ID == 1 {
		t.Fatalf("low exploration: UCT should exploit node 2's subtree, picked %d", p.ID)
	}
	sel, _ = UCT{C: 10}.Select(g, nil)
	if sel.Parents[0] != 3 && sel.Parents[0] != 1 {
		t.Fatalf("high exploration: UCT should try the barely visited node 3 (or the root), picked %d", sel.Parents[0])
	}
}

func TestEvolveWeights(t *testing.T) {
	pop := []*search.Node{node(2, 1, 1, 0), node(3, 1, 2, 0), node(4, 1, 3, 0)}
	g := search.NewGraph(append([]*search.Node{node(1, 0, 1, 0)}, pop...))
	w := Evolve{}.Weights(g, pop)
	if !(w[2] > w[1] && w[1] > w[0]) {
		t.Fatalf("weights must rise with fitness: %v", w)
	}
	g.Add(node(5, 4, 0.5, 0))
	g.Add(node(6, 4, 0.5, 0))
	w2 := Evolve{}.Weights(g, pop)
	if !(w2[2] < w[2]) {
		t.Fatalf("children must lower a node's weight: %v -> %v", w[2], w2[2])
	}
}

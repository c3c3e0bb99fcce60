package search

import "testing"

func TestBestRanksByFitness(t *testing.T) {
	node := func(id int64, fitness float64, noisy bool) *Node {
		return &Node{ID: id, State: NodeDone, Result: &Result{Verdict: VerdictPass, Fitness: fitness, Noisy: noisy}}
	}
	tests := []struct {
		name  string
		nodes []*Node
		want  int64 // 0: none
	}{
		{"highest fitness", []*Node{node(1, 1.2, false), node(2, 3, false)}, 2},
		{"earliest on ties", []*Node{node(1, 2, false), node(2, 2, false)}, 1},
		{"noisy nodes ranked by fitness like the others", []*Node{node(1, 1.1, false), node(2, 30, true)}, 2},
		{"a noisy node beats a quiet one of no fitness", []*Node{node(1, 0, false), node(2, 2, true)}, 2},
		{"none with a positive fitness", []*Node{node(1, 0, false)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := &Graph{Nodes: tc.nodes}
			got := g.Best()
			switch {
			case tc.want == 0 && got != nil:
				t.Fatalf("best %d, want none", got.ID)
			case tc.want != 0 && (got == nil || got.ID != tc.want):
				t.Fatalf("best %v, want node %d", got, tc.want)
			}
		})
	}
}

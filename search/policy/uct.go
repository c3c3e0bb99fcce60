package policy

import (
	"fmt"
	"math"

	"github.com/kevolve/kevolve-mcp/search"
)

// UCT is Monte Carlo tree search over the first-parent tree. Each node's
// visit count is the number of evaluated nodes in its subtree and its value
// the backed-up sum of their rewards (fitness over the graph's best, in
// [0,1]). From the root, the walk either expands the current node or
// descends into the child of highest UCT score Q/N + C·√(ln N_parent / N);
// expanding competes as a virtual child with the node's own reward and
// 1+children visits, so well-explored nodes hand over to their children.
type UCT struct {
	C float64 // exploration constant; 0 = √2
}

func (UCT) Name() string { return "uct" }

type uctStats struct {
	visits   map[int64]float64
	value    map[int64]float64
	hasOpen  map[int64]bool // some open node in the subtree
	children map[int64][]*search.Node
}

func (u UCT) stats(g *search.Graph) uctStats {
	best := 0.0
	for _, n := range g.Nodes {
		best = math.Max(best, n.Fitness())
	}
	s := uctStats{visits: map[int64]float64{}, value: map[int64]float64{}, hasOpen: map[int64]bool{}, children: map[int64][]*search.Node{}}
	// First-parent tree; nodes come in id order, parents before children,
	// so a reverse walk backs each subtree up into its parent.
	for _, n := range g.Nodes {
		if len(n.Parents) > 0 {
			s.children[n.Parents[0]] = append(s.children[n.Parents[0]], n)
		}
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if n.Evaluated() {
			s.visits[n.ID]++
			if best > 0 {
				s.value[n.ID] += n.Fitness() / best
			}
		}
		if g.Open(n) {
			s.hasOpen[n.ID] = true
		}
		if len(n.Parents) > 0 {
			p := n.Parents[0]
			s.visits[p] += s.visits[n.ID]
			s.value[p] += s.value[n.ID]
			s.hasOpen[p] = s.hasOpen[p] || s.hasOpen[n.ID]
		}
	}
	return s
}

func (u UCT) Select(g *search.Graph, _ randSource) (search.Selection, error) {
	c := u.C
	if c <= 0 {
		c = math.Sqrt2
	}
	root := g.Root()
	if root == nil {
		return search.Selection{}, ErrNoOpenNode
	}
	s := u.stats(g)
	if !s.hasOpen[root.ID] {
		return search.Selection{}, ErrNoOpenNode
	}
	best := 0.0
	for _, n := range g.Nodes {
		best = math.Max(best, n.Fitness())
	}
	v := root
	for depth := 0; depth < 10000; depth++ {
		lnN := math.Log(math.Max(s.visits[v.ID], 1))
		var pick *search.Node
		pickScore := math.Inf(-1)
		if g.Open(v) {
			own := 0.0
			if best > 0 {
				own = v.Fitness() / best
			}
			pickScore = own + c*math.Sqrt(lnN/float64(1+len(s.children[v.ID])))
		}
		for _, ch := range s.children[v.ID] {
			if !s.hasOpen[ch.ID] || s.visits[ch.ID] == 0 {
				continue
			}
			score := s.value[ch.ID]/s.visits[ch.ID] + c*math.Sqrt(lnN/s.visits[ch.ID])
			if score > pickScore {
				pick, pickScore = ch, score
			}
		}
		if pick == nil {
			if !g.Open(v) {
				return search.Selection{}, ErrNoOpenNode
			}
			return search.Selection{Parents: []int64{v.ID}, Island: v.Island,
				Why: fmt.Sprintf("uct: expand node %d (visits %.0f, mean reward %.3f)", v.ID, s.visits[v.ID], s.value[v.ID]/math.Max(s.visits[v.ID], 1))}, nil
		}
		v = pick
	}
	return search.Selection{}, fmt.Errorf("uct: tree deeper than 10000")
}

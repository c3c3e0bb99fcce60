package termination

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
)

// Action is what the supervisor asks of the run loop.
type Action struct {
	// SwitchPolicy names the policy to continue with ("" = keep).
	SwitchPolicy string
	// ResetTo pins the next selection to this node, the head of another
	// lineage (0 = none).
	ResetTo int64
	Why     string
}

// Supervisor reacts to stagnation as AVO's does: after Window evaluations
// without a new best it acts, alternating between switching to the next
// policy of Cycle and resetting the search to the best node outside the
// current best's lineage. It acts at most once per window.
type Supervisor struct {
	Window int
	Cycle  []string // e.g. greedy, uct, evolve

	acted int // evaluation count at the last action
	turn  int
}

// Check returns an action, or nil while the run is improving.
func (s *Supervisor) Check(p search.Progress, current string, g *search.Graph) *Action {
	if s == nil || s.Window <= 0 || p.SinceBest < s.Window || p.Evals-s.acted < s.Window {
		return nil
	}
	s.acted = p.Evals
	s.turn++
	if s.turn%2 == 1 {
		if alt := otherLineage(g); alt != nil {
			return &Action{ResetTo: alt.ID, Why: fmt.Sprintf("stagnation: %d evaluations without a new best; resetting to node %d (fitness %.3f), the best outside the best kernel's lineage", p.SinceBest, alt.ID, alt.Fitness())}
		}
	}
	if len(s.Cycle) > 1 {
		next := s.Cycle[0]
		for i, name := range s.Cycle {
			if name == current {
				next = s.Cycle[(i+1)%len(s.Cycle)]
			}
		}
		if next != current {
			return &Action{SwitchPolicy: next, Why: fmt.Sprintf("stagnation: %d evaluations without a new best; switching policy %s -> %s", p.SinceBest, current, next)}
		}
	}
	return nil
}

// otherLineage is the best open node that is neither an ancestor nor a
// descendant of the graph's best node.
func otherLineage(g *search.Graph) *search.Node {
	best := g.Best()
	if best == nil {
		return nil
	}
	related := map[int64]bool{best.ID: true}
	for _, a := range g.Ancestors(best.ID) {
		related[a.ID] = true
	}
	// Descendants: nodes come in id order, children after their parents.
	desc := map[int64]bool{best.ID: true}
	for _, n := range g.Nodes {
		if len(n.Parents) > 0 && desc[n.Parents[0]] {
			desc[n.ID], related[n.ID] = true, true
		}
	}
	var alt *search.Node
	for _, n := range g.Nodes {
		if !related[n.ID] && g.Open(n) && n.Fitness() > 0 && (alt == nil || n.Fitness() > alt.Fitness()) {
			alt = n
		}
	}
	return alt
}

// Package policy holds the selection policies (π_sel): greedy, uct and
// evolve, and the draft phase that precedes any of them. Each derives its
// choice from the graph alone (visit counts, rewards, islands, migrants),
// so a resumed run selects as an uninterrupted one would.
package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// Names lists the policies ByName knows.
var Names = []string{"greedy", "uct", "evolve"}

// Config holds every policy's parameters (stored in the run's config).
type Config struct {
	// Draft is the number of independent children of the root made before
	// the policy proper starts (KernelEvolve's draft phase).
	Draft int `json:"draft"`
	// UCTC is UCT's exploration constant (default √2).
	UCTC float64 `json:"uct_c,omitempty"`
	// Islands, MigrateEvery and Lambda configure evolve (defaults 4, 8, 10).
	Islands      int     `json:"islands,omitempty"`
	MigrateEvery int     `json:"migrate_every,omitempty"`
	Lambda       float64 `json:"lambda,omitempty"`
}

// ByName builds a policy, wrapped in the draft phase when cfg.Draft > 0.
func ByName(name string, cfg Config) (search.Policy, error) {
	var p search.Policy
	switch strings.ToLower(name) {
	case "", "greedy":
		p = Greedy{}
	case "uct", "mcts":
		p = UCT{C: cfg.UCTC}
	case "evolve", "islands":
		p = Evolve{Islands: cfg.Islands, MigrateEvery: cfg.MigrateEvery, Lambda: cfg.Lambda}
	default:
		return nil, fmt.Errorf("policy %q: use one of %s", name, strings.Join(Names, ", "))
	}
	if cfg.Draft > 0 {
		p = Draft{N: cfg.Draft, Inner: p}
	}
	return p, nil
}

// ErrNoOpenNode is returned when every evaluated node is closed.
var ErrNoOpenNode = errors.New("policy: no open node to expand (every evaluated node is exhausted)")

// open returns the graph's open nodes, best fitness first (earliest on ties).
func open(g *search.Graph) []*search.Node {
	var out []*search.Node
	for _, n := range g.Nodes {
		if g.Open(n) {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Fitness() > out[j].Fitness() })
	return out
}

// Greedy expands the best node (KernelEvolve's simplest policy); with no
// correct node yet, the earliest open one (the root first).
type Greedy struct{}

func (Greedy) Name() string { return "greedy" }

func (Greedy) Select(g *search.Graph, _ randSource) (search.Selection, error) {
	nodes := open(g)
	if len(nodes) == 0 {
		return search.Selection{}, ErrNoOpenNode
	}
	best := nodes[0]
	if best.Fitness() <= 0 {
		for _, n := range g.Nodes { // earliest open node
			if g.Open(n) {
				best = n
				break
			}
		}
	}
	return search.Selection{Parents: []int64{best.ID}, Island: best.Island, Why: fmt.Sprintf("best open node (fitness %.3f)", best.Fitness())}, nil
}

package search

import "math/rand"

// Selection is a policy's answer: which node(s) to derive the next
// candidate from, and on which island it lives.
type Selection struct {
	Parents []int64 `json:"parents"`
	Island  int     `json:"island"`
	// Draft marks a draft-phase child of the root (an independent attempt,
	// not an improvement of a lineage).
	Draft bool `json:"draft,omitempty"`
	// Why is one line for the event feed.
	Why string `json:"why,omitempty"`
}

// Policy is π_sel: it picks the next parent(s) from the graph. A policy
// keeps no state of its own beyond its parameters: everything it needs
// (visit counts, islands, rewards) is derived from the graph, so a resumed
// run selects exactly as an uninterrupted one would. The graph always holds
// at least the evaluated root.
type Policy interface {
	Name() string
	Select(g *Graph, rng *rand.Rand) (Selection, error)
}

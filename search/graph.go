package search

import "sort"

// Graph is a read-only view of a run's nodes that policies and operators
// reason over. It is rebuilt from the store, so every decision a policy makes
// can be derived again after a resume.
type Graph struct {
	Nodes []*Node // in id order
	// Closed marks nodes the operator has nothing new to derive from
	// (search.ErrExhausted); policies pass them over. It is not stored: a
	// resumed run finds them again at the cost of one cheap proposal each.
	Closed   map[int64]bool
	byID     map[int64]*Node
	children map[int64][]*Node
}

// NewGraph indexes nodes (any order).
func NewGraph(nodes []*Node) *Graph {
	g := &Graph{byID: map[int64]*Node{}, children: map[int64][]*Node{}, Closed: map[int64]bool{}}
	g.Nodes = append(g.Nodes, nodes...)
	sort.Slice(g.Nodes, func(i, j int) bool { return g.Nodes[i].ID < g.Nodes[j].ID })
	for _, n := range g.Nodes {
		g.byID[n.ID] = n
		for _, p := range n.Parents {
			g.children[p] = append(g.children[p], n)
		}
	}
	return g
}

// Add appends a node (its id larger than every other).
func (g *Graph) Add(n *Node) {
	g.Nodes = append(g.Nodes, n)
	g.byID[n.ID] = n
	for _, p := range n.Parents {
		g.children[p] = append(g.children[p], n)
	}
}

// Node returns a node by id, nil when absent.
func (g *Graph) Node(id int64) *Node { return g.byID[id] }

// Children returns a node's children in id order.
func (g *Graph) Children(id int64) []*Node { return g.children[id] }

// Root is the first node without parents, nil for an empty graph.
func (g *Graph) Root() *Node {
	for _, n := range g.Nodes {
		if len(n.Parents) == 0 {
			return n
		}
	}
	return nil
}

// Evaluated returns the nodes with a result, in id order.
func (g *Graph) Evaluated() []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.Evaluated() {
			out = append(out, n)
		}
	}
	return out
}

// Best is the evaluated node of highest fitness (the earliest on ties), nil
// when none has a positive fitness. A noisy node's fitness is not passed
// over: under a steady load every node is noisy, and preferring the quiet
// ones picked a node 28x slower than the best (its speedups are divided
// by an eager baseline timed in the same evaluation, under the same load).
func (g *Graph) Best() *Node {
	var best *Node
	for _, n := range g.Nodes {
		if n.Evaluated() && n.Fitness() > 0 && (best == nil || n.Fitness() > best.Fitness()) {
			best = n
		}
	}
	return best
}

// Ancestors returns a node's first-parent lineage, nearest first.
func (g *Graph) Ancestors(id int64) []*Node {
	var out []*Node
	seen := map[int64]bool{}
	for n := g.Node(id); n != nil && len(n.Parents) > 0 && !seen[n.ID]; {
		seen[n.ID] = true
		p := g.Node(n.Parents[0])
		if p == nil {
			break
		}
		out = append(out, p)
		n = p
	}
	return out
}

// Siblings returns the other children of a node's first parent.
func (g *Graph) Siblings(id int64) []*Node {
	n := g.Node(id)
	if n == nil || len(n.Parents) == 0 {
		return nil
	}
	var out []*Node
	for _, c := range g.Children(n.Parents[0]) {
		if c.ID != id {
			out = append(out, c)
		}
	}
	return out
}

// Open reports whether a node can still be selected: evaluated and not closed.
func (g *Graph) Open(n *Node) bool { return n.Evaluated() && !g.Closed[n.ID] }

// EvalCount is the number of evaluated nodes.
func (g *Graph) EvalCount() int {
	k := 0
	for _, n := range g.Nodes {
		if n.Evaluated() {
			k++
		}
	}
	return k
}

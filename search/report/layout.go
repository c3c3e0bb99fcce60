package report

import (
	"sort"
)

// graph is the run's nodes in display order with their tree structure: the
// first parent present in the run is a node's tree parent; cycles and
// unknown parents make roots, so any input draws.
type graph struct {
	nodes    []Node // display order: CreatedAt, then input position
	index    map[string]int
	parent   []int   // tree parent, -1 for roots
	extra    [][]int // further parents (dashed edges)
	children [][]int
	roots    []int
	depth    []int
	slot     []float64 // position across the tree, in leaf slots
	leaves   int
	maxDepth int
}

func newGraph(in []Node) *graph {
	nodes := make([]Node, len(in))
	for i, n := range in {
		nodes[i] = sanitize(n)
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].CreatedAt.Before(nodes[j].CreatedAt) })
	g := &graph{nodes: nodes, index: make(map[string]int, len(nodes))}
	for i, n := range nodes {
		if _, dup := g.index[n.ID]; !dup {
			g.index[n.ID] = i
		}
	}
	g.parent = make([]int, len(nodes))
	g.extra = make([][]int, len(nodes))
	for i, n := range nodes {
		g.parent[i] = -1
		for _, pid := range n.Parents {
			p, ok := g.index[pid]
			if !ok || p == i {
				continue
			}
			if g.parent[i] < 0 {
				g.parent[i] = p
			} else if p != g.parent[i] {
				g.extra[i] = append(g.extra[i], p)
			}
		}
	}
	g.breakCycles()
	g.children = make([][]int, len(nodes))
	for i, p := range g.parent {
		if p < 0 {
			g.roots = append(g.roots, i)
		} else {
			g.children[p] = append(g.children[p], i)
		}
	}
	g.layout()
	g.deriveSpeedupStart()
	return g
}

// deriveSpeedupStart fills a missing speedup over the start kernel from
// measured medians: the node's tree root is its start.
func (g *graph) deriveSpeedupStart() {
	for i := range g.nodes {
		n := &g.nodes[i]
		if n.SpeedupStart != nil || n.Verdict != "pass" || n.Timing == nil || !(n.Timing.MedianS > 0) {
			continue
		}
		lin := g.lineage(i)
		root := g.nodes[lin[len(lin)-1]]
		if root.Verdict == "pass" && root.Timing != nil && root.Timing.MedianS > 0 {
			v := root.Timing.MedianS / n.Timing.MedianS
			n.SpeedupStart = &v
		}
	}
}

// breakCycles cuts a parent link that would close a loop (bad input: the
// store never makes one, but the report must draw whatever it is given).
func (g *graph) breakCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(g.parent))
	for i := range g.parent {
		var path []int
		j := i
		for j >= 0 && state[j] == unseen {
			state[j] = onPath
			path = append(path, j)
			if p := g.parent[j]; p >= 0 && state[p] == onPath {
				g.parent[j] = -1
				break
			}
			j = g.parent[j]
		}
		for _, k := range path {
			state[k] = done
		}
	}
}

// layout gives every node a depth and a slot: leaves take consecutive slots
// in depth-first order, a parent sits midway between its first and last
// child (a simple tidy tree; subtrees never overlap).
func (g *graph) layout() {
	g.depth = make([]int, len(g.nodes))
	g.slot = make([]float64, len(g.nodes))
	next := 0.0
	// Iterative post-order so a 10,000-deep chain cannot blow the stack.
	type frame struct{ node, child int }
	for _, r := range g.roots {
		stack := []frame{{r, 0}}
		g.depth[r] = 0
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			kids := g.children[f.node]
			if f.child < len(kids) {
				c := kids[f.child]
				f.child++
				g.depth[c] = g.depth[f.node] + 1
				g.maxDepth = max(g.maxDepth, g.depth[c])
				stack = append(stack, frame{c, 0})
				continue
			}
			if len(kids) == 0 {
				g.slot[f.node] = next
				next++
			} else {
				g.slot[f.node] = (g.slot[kids[0]] + g.slot[kids[len(kids)-1]]) / 2
			}
			stack = stack[:len(stack)-1]
		}
	}
	g.leaves = int(next)
}

// lineage is the chain of tree parents from node i up to its root, i first.
func (g *graph) lineage(i int) []int {
	var out []int
	for ; i >= 0; i = g.parent[i] {
		out = append(out, i)
	}
	return out
}

package report

import (
	"math"
	"sort"
	"time"
)

// evalPoint is one finished evaluation in the order evaluations ended.
type evalPoint struct {
	Node    int     // index into graph.nodes
	Eval    int     // 1-based evaluation number
	T       float64 // seconds since the run started
	Fitness float64 // this evaluation's own fitness
	Best    float64 // best fitness up to and including it
	Improve bool    // it raised the best
}

// bestSoFar carries the running maximum of fitness over finished nodes in
// evaluation order: EvalSeq when every finished node has one, else
// FinishedAt (display order on ties); byTime forces FinishedAt, for the
// chart over wall time. Only pass nodes count, whatever fitness an incorrect
// node was (wrongly) given.
func bestSoFar(g *graph, start time.Time, byTime bool) []evalPoint {
	var done []int
	seq := !byTime
	for i, n := range g.nodes {
		if evaluated(n) && !n.FinishedAt.IsZero() {
			done = append(done, i)
			seq = seq && n.EvalSeq > 0
		}
	}
	sort.SliceStable(done, func(a, b int) bool {
		na, nb := g.nodes[done[a]], g.nodes[done[b]]
		if seq {
			return na.EvalSeq < nb.EvalSeq
		}
		return na.FinishedAt.Before(nb.FinishedAt)
	})
	out := make([]evalPoint, 0, len(done))
	best := 0.0
	for k, i := range done {
		n := g.nodes[i]
		f := fitnessOf(n)
		p := evalPoint{Node: i, Eval: k + 1, Fitness: f}
		if !start.IsZero() {
			p.T = math.Max(0, n.FinishedAt.Sub(start).Seconds())
		}
		if f > best {
			best, p.Improve = f, true
		}
		p.Best = best
		out = append(out, p)
	}
	return out
}

// verdictFailed marks a node whose proposal failed (the operator gave no
// kernel): it has no evaluation.
const verdictFailed = "failed"

// evaluated reports whether the node was evaluated: it has a verdict and
// that verdict is not a failed proposal's.
func evaluated(n Node) bool { return n.Verdict != "" && n.Verdict != verdictFailed }

// fitnessOf is the node's fitness as the report ranks it: 0 unless it passed.
func fitnessOf(n Node) float64 {
	if n.Verdict != "pass" || !(n.Fitness > 0) || math.IsInf(n.Fitness, 1) {
		return 0
	}
	return n.Fitness
}

// bestNode is the run's declared best, else the first pass node of highest
// fitness in display order; -1 when nothing passed.
func bestNode(g *graph, declared string) int {
	if i, ok := g.index[declared]; ok && declared != "" {
		return i
	}
	best := -1
	for i, n := range g.nodes {
		if n.Verdict == "pass" && (best < 0 || fitnessOf(n) > fitnessOf(g.nodes[best])) {
			best = i
		}
	}
	return best
}

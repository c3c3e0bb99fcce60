package openai

import (
	"encoding/json"
	"math"

	"github.com/kevolve/kevolve-mcp/search"
)

// The bandit over models is ShinkaEvolve's UCB1 over LLMs, made
// cost-aware, with its state derived from the run's nodes: every node an
// arm proposed records the arm in its OperatorInput, and the node's result
// is in the store. A resumed run (or another process) rebuilds exactly the
// same statistics from the store, so nothing is lost on resume (the
// failure ShinkaEvolve #130 reports). A failed proposal (an HTTP error, a
// malformed answer) is a failed node too: the operator returns a
// search.ProposalError naming the model and the run loop records it.

// arm is one model's statistics.
type arm struct {
	plays  int
	reward float64 // summed
	tokens float64 // summed
}

// reward of one child: 0 unless it passed; a pass as good as its parent
// scores 0.5, twice as fast or better 1.
func reward(child, parent *search.Node) float64 {
	f := child.Fitness()
	if f <= 0 {
		return 0
	}
	pf := parent.Fitness()
	if pf <= 0 {
		return 0.75 // a first correct kernel from a broken or unmeasured parent
	}
	return math.Min(f/pf, 2) / 2
}

// stats scans the graph for the nodes each model proposed.
func stats(g *search.Graph, op string, models []string) []arm {
	arms := make([]arm, len(models))
	if g == nil {
		return arms
	}
	idx := map[string]int{}
	for i, m := range models {
		idx[m] = i
	}
	for _, n := range g.Nodes {
		if n.Operator != op || !n.State.Finished() || len(n.OperatorInput) == 0 {
			continue
		}
		var in struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(n.OperatorInput, &in) != nil {
			continue
		}
		i, ok := idx[in.Model]
		if !ok {
			continue
		}
		var parent *search.Node
		if len(n.Parents) > 0 {
			parent = g.Node(n.Parents[0])
		}
		a := &arms[i]
		a.plays++
		a.tokens += float64(n.Cost.Tokens)
		if parent != nil {
			a.reward += reward(n, parent)
		} else if n.Fitness() > 0 {
			a.reward += 0.5
		}
	}
	return arms
}

// choose picks the arm: any arm never played first (in order), then the
// largest mean reward divided by its relative cost^costWeight plus the
// UCB1 exploration term sqrt(2 ln N / n).
func choose(arms []arm, costWeight float64) int {
	total := 0
	var tokSum float64
	var tokPlays int
	for i := range arms {
		total += arms[i].plays
		tokSum += arms[i].tokens
		tokPlays += arms[i].plays
	}
	for i := range arms {
		if arms[i].plays == 0 {
			return i
		}
	}
	meanTok := 1.0
	if tokPlays > 0 && tokSum > 0 {
		meanTok = tokSum / float64(tokPlays)
	}
	best, bestScore := 0, math.Inf(-1)
	for i, a := range arms {
		n := float64(a.plays)
		mean := a.reward / n
		rel := 1.0
		if a.plays > 0 && a.tokens > 0 {
			rel = (a.tokens / float64(a.plays)) / meanTok
		}
		score := mean/math.Pow(rel, costWeight) + math.Sqrt(2*math.Log(float64(total))/n)
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

package policy

import (
	"fmt"
	"math"
	"sort"

	"github.com/kevolve/kevolve-mcp/search"
)

// Evolve is an island model (OpenEvolve's islands with ring migration) with
// ShinkaEvolve's parent weighting. Islands take turns, one selection each.
// Within an island a parent is drawn with weight
//
//	sigmoid(λ·(f − median)/MAD) × 1/(1 + children)
//
// over the island's population, so good nodes are favoured and
// much-expanded ones make room for others. Every MigrateEvery evaluations,
// island i receives island i−1's best (a ring): one migrant per epoch, so
// islands exchange ideas. A strong migrant would otherwise take its new
// island over (the islands-collapse-into-one failure): once more than
// MaxForeign of an island's nodes descend from other islands, its migrants
// and their descendants stop being parents there until its own lineage
// catches up.
type Evolve struct {
	Islands      int
	MigrateEvery int
	Lambda       float64
	MaxForeign   float64 // default 0.4
}

func (e Evolve) maxForeign() float64 {
	if e.MaxForeign <= 0 {
		return 0.4
	}
	return e.MaxForeign
}

// Origins maps every node to the island its lineage started on: a draft's
// own island, inherited down first-parent edges.
func Origins(g *search.Graph) map[int64]int {
	o := map[int64]int{}
	for _, n := range g.Nodes { // parents come before children
		if len(n.Parents) == 0 {
			o[n.ID] = -1 // the root belongs to every island
			continue
		}
		po, ok := o[n.Parents[0]]
		if !ok || po < 0 {
			po = n.Island
		}
		o[n.ID] = po
	}
	return o
}

func (e Evolve) Name() string { return "evolve" }

func (e Evolve) islands() int {
	if e.Islands <= 0 {
		return 4
	}
	return e.Islands
}

func (e Evolve) migrateEvery() int {
	if e.MigrateEvery <= 0 {
		return 8
	}
	return e.MigrateEvery
}

func (e Evolve) lambda() float64 {
	if e.Lambda <= 0 {
		return 10
	}
	return e.Lambda
}

// Population returns island i's members: its own evaluated nodes and the
// migrants it has received (the root when it has neither).
func (e Evolve) Population(g *search.Graph, island int) []*search.Node {
	k := e.islands()
	var pop []*search.Node
	seen := map[int64]bool{}
	for _, n := range g.Nodes {
		if n.Evaluated() && n.Island == island && len(n.Parents) > 0 {
			pop = append(pop, n)
			seen[n.ID] = true
		}
	}
	// Migrants: at the end of epoch t, the best of island−1 among the
	// evaluations made by then.
	evals := evaluated(g)
	src := (island - 1 + k) % k
	for t := 1; t*e.migrateEvery() <= len(evals); t++ {
		var best *search.Node
		for _, n := range evals[:t*e.migrateEvery()] {
			if n.Island == src && len(n.Parents) > 0 && n.Fitness() > 0 && (best == nil || n.Fitness() > best.Fitness()) {
				best = n
			}
		}
		if best != nil && !seen[best.ID] && k > 1 {
			pop = append(pop, best)
			seen[best.ID] = true
		}
	}
	if len(pop) == 0 {
		if r := g.Root(); r != nil && r.Evaluated() {
			pop = append(pop, r)
		}
	}
	// Over the foreign cap: keep the island's own lineage only.
	origin := Origins(g)
	own, foreign := 0, 0
	for _, n := range g.Nodes {
		if n.Evaluated() && n.Island == island && len(n.Parents) > 0 {
			if origin[n.ID] == island {
				own++
			} else {
				foreign++
			}
		}
	}
	if foreign > 0 && float64(foreign)/float64(own+foreign) >= e.maxForeign() {
		var kept []*search.Node
		for _, n := range pop {
			if origin[n.ID] == island || origin[n.ID] < 0 {
				kept = append(kept, n)
			}
		}
		if len(kept) > 0 {
			pop = kept
		}
	}
	return pop
}

// evaluated lists evaluated nodes in evaluation order.
func evaluated(g *search.Graph) []*search.Node {
	out := g.Evaluated()
	sort.SliceStable(out, func(i, j int) bool { return out[i].EvalSeq < out[j].EvalSeq })
	return out
}

func (e Evolve) Select(g *search.Graph, rng randSource) (search.Selection, error) {
	k := e.islands()
	turn := 0
	for _, n := range g.Nodes {
		if len(n.Parents) > 0 {
			turn++
		}
	}
	// Islands in turn; one whose population is all closed passes its turn.
	for step := 0; step < k; step++ {
		island := (turn + step) % k
		var pop []*search.Node
		for _, n := range e.Population(g, island) {
			if g.Open(n) {
				pop = append(pop, n)
			}
		}
		if len(pop) == 0 {
			continue
		}
		w := e.Weights(g, pop)
		pick := pop[sample(w, rng)]
		return search.Selection{Parents: []int64{pick.ID}, Island: island,
			Why: fmt.Sprintf("evolve: island %d, node %d (fitness %.3f) of %d", island, pick.ID, pick.Fitness(), len(pop))}, nil
	}
	return search.Selection{}, ErrNoOpenNode
}

// Weights are ShinkaEvolve's parent weights for a population.
func (e Evolve) Weights(g *search.Graph, pop []*search.Node) []float64 {
	fs := make([]float64, len(pop))
	for i, n := range pop {
		fs[i] = n.Fitness()
	}
	med := median(fs)
	dev := make([]float64, len(fs))
	for i, f := range fs {
		dev[i] = math.Abs(f - med)
	}
	mad := median(dev)
	if mad < 1e-12 {
		// All (or most) equal: scale by a small fraction of the median so
		// that a better node still stands out.
		mad = math.Max(0.05*math.Abs(med), 1e-3)
	}
	w := make([]float64, len(pop))
	for i, n := range pop {
		z := e.lambda() * (fs[i] - med) / mad
		w[i] = 1 / (1 + math.Exp(-z)) / float64(1+len(g.Children(n.ID)))
	}
	return w
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sample(w []float64, rng randSource) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	if !(total > 0) {
		return rng.Intn(len(w))
	}
	r := rng.Float64() * total
	for i, x := range w {
		if r < x {
			return i
		}
		r -= x
	}
	return len(w) - 1
}

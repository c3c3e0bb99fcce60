// Package suite runs one search per problem of a set under one global
// evaluation budget, with μCUTLASS's SOL-guided budgeting: a problem stops
// when its best beats the baseline and t_best <= (1+ε)·t_SOL, or after w
// evaluations without a new best, and what it did not spend goes to the
// problems with the most headroom to the speed of light. Every problem's
// search is an ordinary run (resumable node by node); the suite's own
// state is derived from those runs, so a killed suite resumes too.
package suite

// State is one problem's search as the budgeter sees it.
type State struct {
	Name string `json:"name"`
	// Used is the evaluations spent (duplicates answered from the store
	// excluded, as in a run's budget).
	Used        int     `json:"used"`
	BestFitness float64 `json:"best_fitness"`
	BestTimeS   float64 `json:"best_time_s,omitempty"`
	SOLSeconds  float64 `json:"sol_s,omitempty"`
	SinceBest   int     `json:"since_best"`
	// Exhausted: the run itself ended (search space exhausted, operator
	// failures); it gets nothing more.
	Exhausted bool   `json:"exhausted,omitempty"`
	Stopped   string `json:"stopped,omitempty"` // why the budgeter stopped it
	// CostS is the seconds the problem's evaluations are expected to take
	// (Runner.turnCosts): among problems equally served, the costliest
	// gets its turn first.
	CostS float64 `json:"-"`
}

// Headroom is t_best/t_SOL (how many times slower than the speed of
// light); 4 when unknown, so an unmeasured problem is neither starved nor
// favoured over one known to be far from SOL.
func (s State) Headroom() float64 {
	if s.BestTimeS > 0 && s.SOLSeconds > 0 {
		return s.BestTimeS / s.SOLSeconds
	}
	return 4
}

// Budgeter decides which problem gets the next evaluations.
type Budgeter struct {
	Total int // evaluations for the whole suite
	// Chunk is how many evaluations a problem gets per turn (default 4).
	Chunk int
	// Epsilon is the SOL rule's ε (0 = the SOL rule is off); Plateau is w
	// (0 = off).
	Epsilon float64
	Plateau int
	// Weights, when set (by problem name), split Total in proportion
	// instead of evenly: optimize weights a model's problems by the time
	// the whole model would save.
	Weights map[string]float64
}

// shareOf is problem k's fixed share of Total. With weights, every
// problem first gets minWeighted evaluations (its start kernel and one
// step beyond it; fewer when Total cannot give that much to each), so a
// light problem is never starved, and the rest is split by weight.
func (b Budgeter) shareOf(states []State, k int) int {
	sum := 0.0
	for _, s := range states {
		sum += b.Weights[s.Name]
	}
	if len(b.Weights) == 0 || sum <= 0 {
		return b.Share(len(states))
	}
	base := min(minWeighted, b.Share(len(states)))
	rest := b.Total - base*len(states)
	return base + int(float64(rest)*b.Weights[states[k].Name]/sum)
}

// minWeighted is the least a weighted problem gets.
const minWeighted = 2

// Share is the fixed per-problem budget: Total split evenly.
func (b Budgeter) Share(n int) int {
	if n == 0 {
		return 0
	}
	return b.Total / n
}

// stopWhy applies the stopping rules.
func (b Budgeter) stopWhy(s State) string {
	switch {
	case s.Exhausted:
		return "its run ended"
	case b.Epsilon > 0 && s.BestFitness > 1 && s.SOLSeconds > 0 && s.BestTimeS > 0 && s.BestTimeS <= (1+b.Epsilon)*s.SOLSeconds:
		return "at the speed of light"
	case b.Plateau > 0 && s.SinceBest >= b.Plateau:
		return "plateau"
	}
	return ""
}

// Next marks stopped problems and returns the one to run next and how
// many evaluations to give it; ok is false when the budget is spent or
// every problem has stopped. Problems under their fair share go first
// (the least served first; among equals the costliest, then the first);
// after that, what stopped problems left goes to the problem with the most
// headroom.
func (b Budgeter) Next(states []State) (i, evals int, ok bool) {
	chunk := b.Chunk
	if chunk <= 0 {
		chunk = 4
	}
	used := 0
	for k := range states {
		used += states[k].Used
		if states[k].Stopped == "" {
			states[k].Stopped = b.stopWhy(states[k])
		}
	}
	left := b.Total - used
	if left <= 0 {
		return -1, 0, false
	}
	best := -1
	for k, s := range states {
		if s.Stopped == "" && s.Used < b.shareOf(states, k) && (best < 0 || servedBefore(s, states[best])) {
			best = k
		}
	}
	if best >= 0 {
		return best, min(chunk, b.shareOf(states, best)-states[best].Used, left), true
	}
	for k, s := range states {
		if s.Stopped == "" && (best < 0 || s.Headroom() > states[best].Headroom()) {
			best = k
		}
	}
	if best < 0 {
		return -1, 0, false
	}
	return best, min(chunk, left), true
}

// servedBefore says whether s gets its turn before t when both are under
// their share: the less served first, then the costlier (a tie keeps the
// suite's order), the sweep's and the fleet's rule
// (harness.CostliestFirst). Turns run one at a time (a turn's evaluations
// spread over the devices), so this does not shorten a round; it starts
// the slowest problems' work first, as a sweep or the fleet would, so a
// suite stopped mid-round has had their turns.
func servedBefore(s, t State) bool {
	if s.Used != t.Used {
		return s.Used < t.Used
	}
	return s.CostS > t.CostS
}

// Saved is the evaluations the SOL rule saved against the fixed
// per-problem budget: for each problem stopped at the speed of light, its
// share minus what it used.
func (b Budgeter) Saved(states []State) (sol, plateau int) {
	for k, s := range states {
		d := max(b.shareOf(states, k)-s.Used, 0)
		switch s.Stopped {
		case "at the speed of light":
			sol += d
		case "plateau":
			plateau += d
		}
	}
	return sol, plateau
}

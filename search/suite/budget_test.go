package suite

import "testing"

// landscape is a recorded search per problem: the best time after each
// evaluation (seconds), and its t_SOL. Fitness is eager/best.
type landscape struct {
	name  string
	eager float64
	sol   float64
	best  []float64 // best time after evaluation k (k = 1..)
}

// simulate drives the budgeter over recorded landscapes.
func simulate(b Budgeter, ls []landscape) []State {
	st := make([]State, len(ls))
	for i, l := range ls {
		st[i] = State{Name: l.name, SOLSeconds: l.sol}
	}
	for {
		i, n, ok := b.Next(st)
		if !ok {
			return st
		}
		for k := 0; k < n; k++ {
			l, s := ls[i], &st[i]
			if s.Used >= len(l.best) {
				s.Exhausted = true
				break
			}
			t := l.best[s.Used]
			s.Used++
			if s.BestTimeS == 0 || t < s.BestTimeS {
				s.BestTimeS, s.SinceBest = t, 0
			} else {
				s.SinceBest++
			}
			s.BestFitness = l.eager / s.BestTimeS
		}
	}
}

func flat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestBudgetMovesAwayFromProblemsAtSOL(t *testing.T) {
	// atSOL reaches 1.05x t_SOL on its 3rd evaluation; stuck never
	// improves; far keeps improving and stays 5x from SOL.
	far := make([]float64, 100)
	for i := range far {
		far[i] = 10.0 - 0.05*float64(i)
	}
	ls := []landscape{
		{name: "atSOL", eager: 4, sol: 1, best: append([]float64{3, 2, 1.05}, flat(1.05, 97)...)},
		{name: "stuck", eager: 8, sol: 1, best: flat(8, 100)},
		{name: "far", eager: 12, sol: 1, best: far},
	}
	b := Budgeter{Total: 60, Chunk: 2, Epsilon: 0.1, Plateau: 6}
	st := simulate(b, ls)
	if st[0].Stopped != "at the speed of light" || st[0].Used > 4 {
		t.Errorf("atSOL: %+v", st[0])
	}
	if st[1].Stopped != "plateau" || st[1].Used > 8 {
		t.Errorf("stuck: %+v", st[1])
	}
	total := st[0].Used + st[1].Used + st[2].Used
	if total != 60 || st[2].Used < 60-4-8 {
		t.Errorf("far got %d of %d: %+v", st[2].Used, total, st)
	}
	sol, plat := b.Saved(st)
	if sol != 20-st[0].Used || plat != 20-st[1].Used {
		t.Errorf("saved %d (SOL), %d (plateau)", sol, plat)
	}
}

func TestBudgetPrefersHeadroom(t *testing.T) {
	// Both keep improving; after their fair shares the extra (freed by the
	// problem at SOL) goes to the one further from SOL.
	imp := func(start, sol float64) []float64 {
		out := make([]float64, 100)
		for i := range out {
			out[i] = start - 0.001*float64(i)
		}
		return out
	}
	ls := []landscape{
		{name: "done", eager: 4, sol: 1, best: flat(1.0, 100)},
		{name: "near", eager: 4, sol: 1, best: imp(1.5, 1)},
		{name: "far", eager: 40, sol: 1, best: imp(20, 1)},
	}
	st := simulate(Budgeter{Total: 30, Chunk: 1, Epsilon: 0.1}, ls)
	if st[0].Used != 1 || st[1].Used != 10 || st[2].Used != 19 {
		t.Errorf("%+v", st)
	}
}

func TestNoBudgetNoTurn(t *testing.T) {
	if _, _, ok := (Budgeter{Total: 2}).Next([]State{{Used: 2}}); ok {
		t.Error("a spent budget gave a turn")
	}
	if _, _, ok := (Budgeter{Total: 10}).Next([]State{{Exhausted: true}}); ok {
		t.Error("an ended run got a turn")
	}
}

func TestBudgeterWeights(t *testing.T) {
	b := Budgeter{Total: 40, Chunk: 4, Weights: map[string]float64{"big": 3, "small": 1}}
	states := []State{{Name: "big"}, {Name: "small"}}
	for {
		i, n, ok := b.Next(states)
		if !ok {
			break
		}
		states[i].Used += n
	}
	// Two each first, then the other 36 split 3:1.
	if states[0].Used != 29 || states[1].Used != 11 {
		t.Fatalf("weighted 3:1 over 40 evaluations: got %d and %d, want 29 and 11", states[0].Used, states[1].Used)
	}
	// A light problem is not starved by a small budget: each gets two.
	b = Budgeter{Total: 4, Chunk: 2, Weights: map[string]float64{"big": 40, "small": 1}}
	states = []State{{Name: "big"}, {Name: "small"}}
	for {
		i, n, ok := b.Next(states)
		if !ok {
			break
		}
		states[i].Used += n
	}
	if states[0].Used != 2 || states[1].Used != 2 {
		t.Fatalf("weighted 40:1 over 4 evaluations: got %d and %d, want 2 and 2", states[0].Used, states[1].Used)
	}
}

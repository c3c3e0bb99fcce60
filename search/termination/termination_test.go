package termination

import (
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget search.Budget
		p      search.Progress
		want   string // "" = keep going
	}{
		{"evals spent", search.Budget{Evals: 10}, search.Progress{Evals: 10}, "evaluation budget"},
		{"evals left", search.Budget{Evals: 10}, search.Progress{Evals: 9}, ""},
		{"time", search.Budget{Time: time.Minute}, search.Progress{Elapsed: 61 * time.Second}, "time budget"},
		{"tokens", search.Budget{Tokens: 100}, search.Progress{Tokens: 100}, "token budget"},
		{"plateau", search.Budget{Plateau: 5}, search.Progress{SinceBest: 5}, "plateau"},
		{"target", search.Budget{TargetSpeedup: 2}, search.Progress{BestFitness: 2.1}, "target speedup"},
		// μCUTLASS: within ε of SOL only counts once the baseline is beaten.
		{"near SOL", search.Budget{SOLEpsilon: 0.1}, search.Progress{BestFitness: 1.5, BestTimeS: 1.05, SOLSeconds: 1}, "speed of light"},
		{"near SOL, baseline not beaten", search.Budget{SOLEpsilon: 0.1}, search.Progress{BestFitness: 0.9, BestTimeS: 1.05, SOLSeconds: 1}, ""},
		{"far from SOL", search.Budget{SOLEpsilon: 0.1}, search.Progress{BestFitness: 3, BestTimeS: 1.2, SOLSeconds: 1}, ""},
		{"SOL unknown", search.Budget{SOLEpsilon: 0.1}, search.Progress{BestFitness: 3, BestTimeS: 1}, ""},
	} {
		stop, why := FromBudget(tc.budget).Stop(tc.p)
		if stop != (tc.want != "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: stop=%v %q, want %q", tc.name, stop, why, tc.want)
		}
	}
}

func TestSupervisorAlternatesAndWaitsAWindow(t *testing.T) {
	// root(1) -> 2 (best lineage: 2 -> 4), root -> 3 (another lineage)
	n := func(id int64, parent int64, f float64) *search.Node {
		nd := &search.Node{ID: id, State: search.NodeDone, Result: &search.Result{Verdict: search.VerdictPass, Fitness: f}}
		if parent != 0 {
			nd.Parents = []int64{parent}
		}
		return nd
	}
	g := search.NewGraph([]*search.Node{n(1, 0, 1), n(2, 1, 2), n(3, 1, 1.5), n(4, 2, 3)})
	s := &Supervisor{Window: 3, Cycle: []string{"greedy", "uct", "evolve"}}
	if a := s.Check(search.Progress{Evals: 4, SinceBest: 2}, "greedy", g); a != nil {
		t.Fatalf("acted before the window: %+v", a)
	}
	a := s.Check(search.Progress{Evals: 5, SinceBest: 3}, "greedy", g)
	if a == nil || a.ResetTo != 3 {
		t.Fatalf("first action should reset to node 3 (the best outside node 4's lineage): %+v", a)
	}
	if a := s.Check(search.Progress{Evals: 6, SinceBest: 4}, "greedy", g); a != nil {
		t.Fatalf("acted twice within one window: %+v", a)
	}
	a = s.Check(search.Progress{Evals: 8, SinceBest: 6}, "greedy", g)
	if a == nil || a.SwitchPolicy != "uct" || !strings.Contains(a.Why, "greedy -> uct") {
		t.Fatalf("second action should switch greedy -> uct: %+v", a)
	}
}

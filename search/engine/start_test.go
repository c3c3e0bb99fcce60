package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

// startRecorder is the landscape as a search.StartEvaluator: it records
// what the run asked of its start evaluation, and which nodes were
// evaluated as the start.
type startRecorder struct {
	landscape
	mu           sync.Mutex
	starts       int
	withCompile  []bool
	freshOrPlain int
}

func (s *startRecorder) EvaluateStart(ctx context.Context, p search.Problem, code string, withCompile bool) (*search.Result, error) {
	s.mu.Lock()
	s.starts++
	s.withCompile = append(s.withCompile, withCompile)
	s.mu.Unlock()
	return s.landscape.Evaluate(ctx, p, code)
}

func (s *startRecorder) EvaluateFresh(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	s.mu.Lock()
	s.freshOrPlain++
	s.mu.Unlock()
	return s.landscape.Evaluate(ctx, p, code)
}

// TestStartLeavesTheCompileTimingToLaterEvaluations: a run's start node
// is evaluated through EvaluateStart, once, and asks for the
// torch.compile timing only where the run needs it from the start: a
// compile baseline (the start's fitness is over it) or a budget of one
// evaluation (no later one would measure it).
func TestStartLeavesTheCompileTimingToLaterEvaluations(t *testing.T) {
	cases := []struct {
		name        string
		baseline    string
		evals       int
		withCompile bool
	}{
		{"eager_baseline", search.BaselineEager, 6, false},
		{"compile_baseline", search.BaselineCompile, 6, true},
		{"one_evaluation", search.BaselineEager, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &startRecorder{}
			e, _ := newTestEngine(t, ev)
			_, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("start-" + tc.name), StartCode: startCode(4, 4),
				Policy: "greedy", Baseline: tc.baseline, Budget: search.Budget{Evals: tc.evals}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if ev.starts != 1 || ev.freshOrPlain != 0 {
				t.Fatalf("%d start evaluations and %d fresh ones, want the one start through EvaluateStart", ev.starts, ev.freshOrPlain)
			}
			if ev.withCompile[0] != tc.withCompile {
				t.Fatalf("start asked withCompile=%v, want %v", ev.withCompile[0], tc.withCompile)
			}
			if n := ev.calls.Load(); tc.evals > 1 && n < 2 {
				t.Fatalf("%d evaluations: no later one to leave the timing to", n)
			}
		})
	}
}

package search

import "testing"

func TestFitness(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        *Result
		baseline string
		want     float64
	}{
		{"pass vs eager", &Result{Verdict: VerdictPass, Correct: true, TimeS: 2, EagerS: 4, CompileS: 3}, BaselineEager, 2},
		{"pass vs compile", &Result{Verdict: VerdictPass, Correct: true, TimeS: 2, EagerS: 4, CompileS: 3}, BaselineCompile, 1.5},
		{"compile not measured falls back to eager", &Result{Verdict: VerdictPass, Correct: true, TimeS: 2, EagerS: 4}, BaselineCompile, 2},
		{"incorrect", &Result{Verdict: VerdictIncorrect, TimeS: 1, EagerS: 4}, BaselineEager, 0},
		{"integrity flagged though timed", &Result{Verdict: VerdictIntegrityViolation, Correct: true, TimeS: 1, EagerS: 4}, BaselineEager, 0},
		{"pass but not timed", &Result{Verdict: VerdictPass, Correct: true, EagerS: 4}, BaselineEager, 0},
		{"nil", nil, BaselineEager, 0},
	} {
		if got := Fitness(tc.r, tc.baseline); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseBaseline(t *testing.T) {
	for in, want := range map[string]string{"": "eager", "eager": "eager", "compile": "compile", "torch.compile": "compile"} {
		if got, err := ParseBaseline(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	if _, err := ParseBaseline("cudnn"); err == nil {
		t.Error("unknown baseline accepted")
	}
}

func TestNormalizedHash(t *testing.T) {
	a := "x = 1\n\ny = 2   \n"
	if NormalizedHash(a) != NormalizedHash("x = 1\r\ny = 2\n\n") {
		t.Error("blank lines, CRLF and trailing spaces must not change the hash")
	}
	if NormalizedHash(a) == NormalizedHash("x = 1\ny = 3\n") {
		t.Error("different code, same hash")
	}
	if NormalizedHash("#define B 1\n") == NormalizedHash("#define B 2\n") {
		t.Error("preprocessor lines are code")
	}
}

func TestSummarize(t *testing.T) {
	run := &Run{ID: "r", Problem: Problem{Name: "p", Target: "cpu"}, Baseline: BaselineEager, BestNode: 3}
	nodes := []*Node{
		{ID: 1, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 4, EagerS: 2, Fitness: 0.5}},
		{ID: 2, Parents: []int64{1}, State: NodeDone, Result: &Result{Verdict: VerdictIncorrect}},
		{ID: 3, Parents: []int64{1}, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 1, EagerS: 2, Fitness: 2, PctOfSOL: 40}},
		{ID: 4, Parents: []int64{3}, State: NodeDone, DuplicateOf: 3, Result: &Result{Verdict: VerdictPass, Fitness: 2}},
		{ID: 5, Parents: []int64{3}, State: NodeFailed},
		{ID: 6, Parents: []int64{3}, State: NodeEvaluating},
	}
	s := Summarize(run, nodes)
	// Node 2's wrong result is a failed evaluation (it read failed: 0 in
	// issue 36); node 5 was never judged.
	if s.Evaluations != 3 || s.Passed != 2 || s.Failed != 1 || s.Duplicates != 1 || s.Unjudged != 1 || s.InFlight != 1 {
		t.Fatalf("counts %+v", s)
	}
	if s.Best == nil || s.Best.ID != 3 || s.Best.SpeedupOverStart != 4 || s.Best.PctOfSOL != 40 || s.Start.ID != 1 {
		t.Fatalf("best %+v start %+v", s.Best, s.Start)
	}
}

// A node without a torch.compile timing of its own (evaluated while
// another node measured it; a start that left it to later evaluations) is
// summarized against the run's: the earliest measurement. A node that has
// its own keeps it, and a failed one gets none.
func TestSummarizeAgainstTheRunsCompileTiming(t *testing.T) {
	run := &Run{ID: "r", Problem: Problem{Name: "p", Target: "nvidia"}, Baseline: BaselineEager, BestNode: 4}
	nodes := []*Node{
		{ID: 1, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 4, EagerS: 2}},
		{ID: 2, Parents: []int64{1}, State: NodeDone, Result: &Result{Verdict: VerdictIncorrect}},
		{ID: 3, Parents: []int64{1}, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 3, EagerS: 2, CompileS: 1.5, SpeedupVsCompile: 0.5}},
		{ID: 4, Parents: []int64{1}, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 1, EagerS: 2, Fitness: 2}},
		{ID: 5, Parents: []int64{3}, State: NodeDone, Result: &Result{Verdict: VerdictPass, Correct: true, TimeS: 2, CompileS: 9, SpeedupVsCompile: 4.5}},
	}
	cases := []struct {
		best int64
		want float64
	}{
		{4, 1.5}, // none of its own: the run's, node 3's
		{5, 4.5}, // its own
		{2, 0},   // failed: no speedup
		{3, 0.5}, // the measurement itself
	}
	for _, tc := range cases {
		run.BestNode = tc.best
		s := Summarize(run, nodes)
		if s.Best.SpeedupVsCompile != tc.want {
			t.Errorf("best node %d: %v over torch.compile, want %v", tc.best, s.Best.SpeedupVsCompile, tc.want)
		}
	}
	if s := Summarize(run, nodes); s.Start.SpeedupVsCompile != 1.5/4 {
		t.Errorf("start: %v over torch.compile, want the run's timing over its own %v", s.Start.SpeedupVsCompile, 1.5/4)
	}
}

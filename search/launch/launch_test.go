package launch

import (
	"testing"

	"github.com/kevolve/kevolve-mcp/search/engine"
)

func TestDraft(t *testing.T) {
	for _, tc := range []struct {
		policy         string
		asked, islands int
		want           int
	}{
		{"greedy", DraftUnset, 0, 0},
		{"uct", DraftUnset, 6, 0},
		{"evolve", DraftUnset, 0, 4},
		{"evolve", DraftUnset, 2, 4},
		{"evolve", DraftUnset, 6, 6},
		{"evolve", 0, 6, 0},
		{"greedy", 3, 0, 3},
	} {
		o := engine.StartOptions{Policy: tc.policy}
		o.Config.Policy.Draft, o.Config.Policy.Islands = tc.asked, tc.islands
		ApplyDefaults(&o)
		if o.Config.Policy.Draft != tc.want {
			t.Errorf("%s draft %d islands %d: got %d, want %d", tc.policy, tc.asked, tc.islands, o.Config.Policy.Draft, tc.want)
		}
	}
}

func TestSuiteBudget(t *testing.T) {
	eps, plateau := 0.0, 3
	for _, tc := range []struct {
		name      string
		r         SuiteRequest
		wantEps   float64
		wantPlat  int
		wantTotal int
	}{
		{"defaults", SuiteRequest{Request: Request{Start: engine.StartOptions{}}}, SuiteEpsilon, SuitePlateau, 0},
		{"asked", SuiteRequest{Epsilon: &eps, Plateau: &plateau}, 0, 3, 0},
	} {
		tc.r.Start.Budget.Evals = 40
		b := suiteBudget(tc.r)
		if b.Epsilon != tc.wantEps || b.Plateau != tc.wantPlat || b.Total != 40 {
			t.Errorf("%s: got %+v", tc.name, b)
		}
	}
}

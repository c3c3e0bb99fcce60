package launch

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// TestRecordAndSwitchOperator: a recorded run gets the request's defaults
// and nothing evaluated; resuming it switches operators only within a kind.
func TestRecordAndSwitchOperator(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	l := &Launcher{Store: st, Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
		return search.Problem{Name: s.Name, ReferencePath: s.Name, Target: s.Target, Language: "c"}, "class ModelNew: pass\n", nil
	}}
	req := Request{Spec: engine.ProblemSpec{Name: "p.py", Target: "auto"}, Operator: "openai:a@http://127.0.0.1:1/v1",
		Start: engine.StartOptions{Policy: "evolve", Budget: search.Budget{Evals: 3}}}
	req.Start.Config.Policy.Draft = DraftUnset
	if _, err := l.Record(ctx, req); err == nil {
		t.Fatal("target auto was recorded without discovery")
	}
	req.Spec.Target = "CUDA" // an alias of the one target table
	run, err := l.Record(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if run.Problem.Target != "nvidia" || run.Operator != req.Operator {
		t.Fatalf("recorded %s with %s, want nvidia with %s", run.Problem.Target, run.Operator, req.Operator)
	}
	for _, tc := range []struct {
		name         string
		wantSwitched bool
		wantErr      bool
	}{
		{req.Operator, false, false},
		{"openai:b@http://127.0.0.1:2/v1", true, false},
		{"tuner", false, true},
		{"cmd:./agent.sh", false, true},
	} {
		switched, err := l.SwitchOperator(ctx, run, tc.name)
		if switched != tc.wantSwitched || (err != nil) != tc.wantErr {
			t.Errorf("switch to %s: switched %v err %v", tc.name, switched, err)
		}
	}
	got, err := st.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Operator != "openai:b@http://127.0.0.1:2/v1" {
		t.Errorf("stored operator %s, want the switched one", got.Operator)
	}
}

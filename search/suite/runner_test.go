package suite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// TestSuiteRunAndResume runs a two-problem suite with the tuner on the
// real harness, then resumes it with a larger budget: the same runs go
// on, the budget is counted across both drives, and the end table holds
// every problem.
func TestSuiteRunAndResume(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	root := t.TempDir()
	var probs []Problem
	for _, name := range []string{"llm/rmsnorm", "other/relu"} {
		p, start, err := engine.ResolveProblem(ctx, nil, engine.ProblemSpec{Name: name, Target: "cpu", CorpusRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		probs = append(probs, Problem{Problem: p, Start: start})
	}
	e := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 1}, Operator: tuner.New()}
	r := &Runner{Engine: e, Budget: Budgeter{Total: 4, Chunk: 2, Plateau: 5}, Seed: 3, Devices: []string{"cpu"}}
	rep, err := r.Run(ctx, "s-test", probs)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Used != 4 || len(rep.Rows) != 2 || rep.FastEager[0] != 1 || rep.GPUSeconds <= 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, row := range rep.Rows {
		if row.Used != 2 || !strings.HasPrefix(row.RunID, "s-test--") {
			t.Errorf("row %+v", row)
		}
	}
	// Resume with a larger budget: the same runs continue.
	r.Budget.Total = 8
	rep, err = r.Run(ctx, "s-test", probs)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := st.Runs(ctx)
	if len(runs) != 2 {
		t.Errorf("%d runs after resume", len(runs))
	}
	if rep.Used > 8 || rep.Used < 6 {
		t.Errorf("used %d of 8: %+v", rep.Used, rep.Rows)
	}
	for _, row := range rep.Rows {
		nodes, _ := st.Nodes(ctx, row.RunID)
		n := 0
		for _, x := range nodes {
			if x.State == search.NodeDone && x.DuplicateOf == 0 {
				n++
			}
		}
		if n != row.Used {
			t.Errorf("%s: %d evaluations in the store, %d in the table", row.Name, n, row.Used)
		}
	}
	var b strings.Builder
	WriteTable(&b, rep)
	if !strings.Contains(b.String(), "fast_1") || !strings.Contains(b.String(), "llm/rmsnorm") {
		t.Errorf("table:\n%s", b.String())
	}
	t.Logf("\n%s", b.String())
}

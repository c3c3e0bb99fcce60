package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// TestStartNodeIsMeasuredInTheRun: an earlier `eval` of the start kernel
// (the harness's cache holds it) and an earlier run of the same problem
// (the store holds its root) answer nothing about a new run's start node:
// it is measured in the run (issue 20).
func TestStartNodeIsMeasuredInTheRun(t *testing.T) {
	ctx := context.Background()
	py := toolchaintest.Python(t)
	db, err := store.Open(filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(), DB: db,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	ad := &harnesseval.Adapter{Ev: ev, Timeout: 120 * time.Second, Trials: 1}
	prob, start := liveProblem(t, "other/relu")
	first, err := ad.Evaluate(ctx, prob, start)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := ad.Evaluate(ctx, prob, start); err != nil || !again.Cached {
		t.Fatalf("the harness cache does not answer the start kernel (%v): this test would prove nothing", err)
	}
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Store: st, Eval: ad, Operator: tuner.New()}
	var roots []*search.Node
	for i := 0; i < 2; i++ {
		run, err := e.Run(ctx, StartOptions{Problem: prob, StartCode: start, Policy: "greedy", Budget: search.Budget{Evals: 1}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ns, err := st.Nodes(ctx, run.ID)
		if err != nil || len(ns) == 0 {
			t.Fatalf("%d nodes, %v", len(ns), err)
		}
		roots = append(roots, ns[0])
	}
	for i, r := range roots {
		if r.Result == nil || r.Result.Verdict != first.Verdict || r.Result.Cached || r.DuplicateOf != 0 || r.Cost.EvalS <= 0 {
			t.Errorf("run %d's start node was not measured in the run: duplicate of %d, %+v", i+1, r.DuplicateOf, r.Result)
		}
	}
}

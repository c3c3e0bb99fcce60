package openai

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/novelty"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// TestRejectedTokensCountTowardTheBudget runs a search whose model answers
// the start kernel again every time, through the loopback endpoint: each
// answer is rejected as a duplicate, and the tokens the endpoint served
// for them are the run's tokens, stop it at its token budget and are
// stored with each rejected proposal (issue 20: a run reported 2,404
// tokens where the endpoint had served about 21,800).
func TestRejectedTokensCountTowardTheBudget(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	e := newEndpoint(t)
	p, _, err := engine.ResolveProblem(context.Background(), nil, engine.ProblemSpec{Name: "other/relu", Target: "cpu", CorpusRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// The start is the model's own answer (a kernel for another problem:
	// its verdict does not matter, only that every answer repeats it).
	start := between(read(t, "replies/file.md"), "```python\n", "```")
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	op := &novelty.Op{Inner: op(t, e, "dup-model", 20*time.Second), Retries: 2}
	eng := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 1}, Operator: op}
	run, err := eng.Run(context.Background(), engine.StartOptions{Problem: p, StartCode: start, Policy: "greedy",
		Budget: search.Budget{Evals: 5, Tokens: 3000}, Seed: 1})
	if err != nil && !strings.Contains(err.Error(), "novelty") {
		t.Fatal(err)
	}
	if run, err = st.Run(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	nodes, err := st.Nodes(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum := search.Summarize(run, nodes)
	rej, err := st.Rejected(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	served := e.served
	e.mu.Unlock()
	if served == 0 || sum.Tokens != served || sum.RejectedTokens != served || sum.Rejected != len(rej) || len(rej) != 3 {
		t.Fatalf("endpoint served %d tokens; run counts %d (%d in %d rejected), %d stored", served, sum.Tokens, sum.RejectedTokens, sum.Rejected, len(rej))
	}
	for _, r := range rej {
		if r.Tokens != 1209 || r.SimilarTo != nodes[0].ID || !strings.Contains(r.Reason, "same program") || r.Code == "" || len(r.Inputs) == 0 {
			t.Errorf("rejected %+v", r)
		}
	}
	if !strings.Contains(run.StopReason, "token budget") {
		t.Errorf("run %s with %q (err %v), want the token budget (%d tokens spent of 3000)", run.Status, run.StopReason, err, sum.Tokens)
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		s = s[:j]
	}
	return s
}

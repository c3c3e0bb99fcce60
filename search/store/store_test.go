package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// Version is the newest applied migration of the search tables (0 = none).
func Version(ctx context.Context, db *sql.DB) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations WHERE component = ?`, component).Scan(&v)
	return int(v.Int64), err
}

func openTest(t *testing.T) *SQLite {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMigrateIsVersionedAndIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	// Several processes' worth of connections migrating at once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(path)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			_, err = New(ctx, db)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db, _ := Open(path)
	defer db.Close()
	v, err := Version(ctx, db)
	if err != nil || v != migrations[len(migrations)-1].Version {
		t.Fatalf("version %d, %v; want %d", v, err, migrations[len(migrations)-1].Version)
	}
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE component='search'`).Scan(&n)
	if n != len(migrations) {
		t.Fatalf("%d migration rows, want %d", n, len(migrations))
	}
	for i, m := range migrations {
		if m.Version != i+1 {
			t.Fatalf("migration %d has version %d: versions must be 1..n in order", i, m.Version)
		}
	}
}

func TestNodeLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &search.Run{Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy", Operator: "tuner",
		Baseline: "eager", Budget: search.Budget{Evals: 5}, Seed: 7}
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	root := &search.Node{RunID: run.ID, Code: "A = 1\n", Language: "c", State: search.NodeEvaluating}
	if err := s.InsertNode(ctx, root); err != nil {
		t.Fatal(err)
	}
	root.State = search.NodeDone
	root.Result = &search.Result{Verdict: "pass", Correct: true, TimeS: 1, EagerS: 2, Fitness: 2}
	run.BestNode = root.ID
	run.ElapsedS = 3.5
	if err := s.FinishNode(ctx, root, run); err != nil {
		t.Fatal(err)
	}
	if root.EvalSeq != 1 {
		t.Fatalf("eval seq %d", root.EvalSeq)
	}
	if err := s.FinishNode(ctx, root, run); err == nil {
		t.Fatal("finishing a node twice must fail: it would count an evaluation twice")
	}
	child := &search.Node{RunID: run.ID, Parents: []int64{root.ID}, Depth: 1, Code: "A = 2\n", Language: "c"}
	if err := s.InsertNode(ctx, child); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeState(ctx, child.ID, search.NodeEvaluating); err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, run.ID)
	if err != nil || got.BestNode != root.ID || got.ElapsedS != 3.5 || got.Budget.Evals != 5 || got.Problem.Name != "llm/rmsnorm" {
		t.Fatalf("run %+v, %v", got, err)
	}
	nodes, err := s.Nodes(ctx, run.ID)
	if err != nil || len(nodes) != 2 || nodes[1].State != search.NodeEvaluating || nodes[1].Parents[0] != root.ID || nodes[0].Result.Fitness != 2 {
		t.Fatalf("nodes %+v, %v", nodes, err)
	}
	var edges int
	s.DB().QueryRow(`SELECT COUNT(*) FROM search_edges WHERE child_id=?`, child.ID).Scan(&edges)
	if edges != 1 {
		t.Fatalf("%d edges", edges)
	}
	// Dedup: the same code (modulo blank lines and trailing spaces) is found in this run and in another run of the problem.
	dup, err := s.EvaluatedByHash(ctx, run.ID, run.Problem.Key(), search.NormalizedHash("A = 1   \n\n"))
	if err != nil || dup == nil || dup.ID != root.ID {
		t.Fatalf("dup %+v, %v", dup, err)
	}
	other := &search.Run{Problem: run.Problem, Policy: "greedy", Operator: "tuner", Baseline: "eager"}
	s.CreateRun(ctx, other)
	if dup, _ := s.EvaluatedByHash(ctx, other.ID, other.Problem.Key(), root.Hash); dup == nil || dup.ID != root.ID {
		t.Fatal("a second run of the same problem must find the first run's evaluation")
	}
	third := &search.Run{Problem: search.Problem{Name: "llm/softmax", Target: "cpu"}, Policy: "greedy", Operator: "tuner", Baseline: "eager"}
	s.CreateRun(ctx, third)
	if dup, _ := s.EvaluatedByHash(ctx, third.ID, third.Problem.Key(), root.Hash); dup != nil {
		t.Fatal("another problem must not share evaluations")
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, search.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	runs, _ := s.Runs(ctx)
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
}

func TestEventsAreSequenced(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &search.Run{Problem: search.Problem{Name: "p", Target: "cpu"}, Policy: "greedy", Operator: "tuner", Baseline: "eager"}
	s.CreateRun(ctx, run)
	for i := 0; i < 5; i++ {
		e := &search.Event{RunID: run.ID, Kind: search.EventEvaluated, Message: "x"}
		if err := s.AppendEvent(ctx, e); err != nil || e.Seq != int64(i+1) {
			t.Fatalf("event %d: seq %d, %v", i, e.Seq, err)
		}
	}
	evs, err := s.Events(ctx, run.ID, 2, 2)
	if err != nil || len(evs) != 2 || evs[0].Seq != 3 || evs[1].Seq != 4 {
		t.Fatalf("events %+v, %v", evs, err)
	}
}

// A database made by an older build (migrations 1-2) is upgraded in place:
// its runs survive, and the new columns work.
func TestMigrateUpgradesOldDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE schema_migrations (component TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')), PRIMARY KEY (component, version))`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if err := apply(ctx, db, component, m); err != nil {
			t.Fatal(err)
		}
	}
	old := &SQLite{db: db}
	run := &search.Run{Problem: search.Problem{Name: "p", Target: "cpu"}, Policy: "greedy", Operator: "tuner", Baseline: "eager"}
	if err := old.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := Version(ctx, db); v != len(migrations) {
		t.Fatalf("version %d after upgrade", v)
	}
	if got, err := s.Run(ctx, run.ID); err != nil || got.Problem.Name != "p" {
		t.Fatalf("run lost in the upgrade: %v", err)
	}
	if err := s.AcquireRun(ctx, run.ID, "me", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AcquireRun(ctx, run.ID, "you", time.Minute, func(string) bool { return true }); !errors.Is(err, search.ErrRunBusy) {
		t.Fatalf("second driver: %v", err)
	}
}

// A run and its root are written together or not at all: a run without a
// root node cannot be resumed (the start code lives only in the root).
func TestCreateRunWithRootIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun := func() *search.Run {
		return &search.Run{Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy", Operator: "tuner",
			Baseline: "eager", Budget: search.Budget{Evals: 5}, Seed: 7}
	}
	bad := newRun()
	if err := s.CreateRunWithRoot(ctx, bad, &search.Node{Language: "c"}); err == nil {
		t.Fatal("a root without code must be refused")
	}
	if _, err := s.Run(ctx, bad.ID); !errors.Is(err, search.ErrNotFound) {
		t.Fatalf("the run of a failed root insert must not exist, got %v", err)
	}
	good := newRun()
	root := &search.Node{Code: "A = 1\n", Language: "c", Operator: "start"}
	if err := s.CreateRunWithRoot(ctx, good, root); err != nil {
		t.Fatal(err)
	}
	nodes, err := s.Nodes(ctx, good.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].ID != root.ID || root.RunID != good.ID || nodes[0].State != search.NodePending {
		t.Fatalf("want the one pending root node %d of run %s, got %+v", root.ID, good.ID, nodes)
	}
}

// TestRejectedProposals: the accessor `evolve export` reads returns what
// the run loop wrote, in order, and a node keeps its rejected asks' count.
func TestRejectedProposals(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &search.Run{Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy", Operator: "cmd:x", Baseline: "eager"}
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	root := &search.Node{RunID: run.ID, Code: "A = 1\n", Language: "c",
		Cost: search.Cost{Tokens: 900, Rejected: 2, RejectedTokens: 600}}
	if err := s.InsertNode(ctx, root); err != nil {
		t.Fatal(err)
	}
	in := []*search.RejectedProposal{
		{RunID: run.ID, Parents: []int64{root.ID}, Operator: "cmd:x", Try: 1, Code: "A = 1\n", Reason: "same program as node 1",
			SimilarTo: root.ID, Similarity: 1, Tokens: 250, Inputs: []byte(`{"prompt_sha":"ab"}`), Seed: 5},
		{RunID: run.ID, Operator: "cmd:x", Try: 2, Code: "A  = 1\n", Reason: "again", Tokens: 350, Feedback: "not evaluated"},
	}
	for _, r := range in {
		if err := s.InsertRejected(ctx, r); err != nil || r.ID == 0 {
			t.Fatal(r.ID, err)
		}
	}
	if err := s.InsertRejected(ctx, &search.RejectedProposal{RunID: run.ID}); err == nil {
		t.Error("a rejection without a reason was stored")
	}
	got, err := s.Rejected(ctx, run.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d rejected, %v", len(got), err)
	}
	a, b := got[0], got[1]
	if a.Tokens != 250 || a.SimilarTo != root.ID || a.Similarity != 1 || string(a.Inputs) != `{"prompt_sha":"ab"}` || len(a.Parents) != 1 || a.Seed != 5 || a.CreatedAt.IsZero() {
		t.Errorf("first: %+v", a)
	}
	if b.Try != 2 || b.Feedback != "not evaluated" || b.Parents != nil || b.SimilarTo != 0 || b.Inputs != nil {
		t.Errorf("second: %+v", b)
	}
	n, err := s.Node(ctx, root.ID)
	if err != nil || n.Cost.Rejected != 2 || n.Cost.RejectedTokens != 600 || n.Cost.Tokens != 900 {
		t.Errorf("node cost %+v, %v", n.Cost, err)
	}
}

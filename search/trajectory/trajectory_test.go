package trajectory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// storedRun writes a run with a passing root, a rejected child (incorrect)
// and a failed one (the operator failed) into a real store.
func storedRun(t *testing.T) (*store.SQLite, string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	run := &search.Run{Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy", Operator: "tuner", Baseline: "eager", Budget: search.Budget{Evals: 3}}
	root := &search.Node{Code: "A = 1\n", Language: "c", Operator: "start", State: search.NodeEvaluating}
	if err := st.CreateRunWithRoot(ctx, run, root); err != nil {
		t.Fatal(err)
	}
	finish := func(n *search.Node, res *search.Result, state search.NodeState) {
		n.State, n.Result = state, res
		if err := st.FinishNode(ctx, n, run); err != nil {
			t.Fatal(err)
		}
	}
	finish(root, &search.Result{Verdict: search.VerdictPass, Correct: true, TimeS: 1e-3, EagerS: 2e-3, SpeedupVsEager: 2, Fitness: 1,
		Checks: []search.Check{{Name: "allclose", Passed: true}}}, search.NodeDone)
	child := &search.Node{RunID: run.ID, Parents: []int64{root.ID}, Depth: 1, Code: "A = 2\n", Language: "c", Operator: "tuner",
		Notes: "A=2, \"quoted\"\nnewline", OperatorInput: json.RawMessage(`{"prompt":"make it faster"}`), State: search.NodeEvaluating}
	if err := st.InsertNode(ctx, child); err != nil {
		t.Fatal(err)
	}
	finish(child, &search.Result{Verdict: search.VerdictIncorrect, Checks: []search.Check{{Name: "allclose", Passed: false, Detail: "max diff 3"}}}, search.NodeDone)
	failed := &search.Node{RunID: run.ID, Parents: []int64{root.ID}, Depth: 1, Code: "A = 3\n", Language: "c", Operator: "tuner", State: search.NodeEvaluating, Error: "operator timed out"}
	if err := st.InsertNode(ctx, failed); err != nil {
		t.Fatal(err)
	}
	finish(failed, nil, search.NodeFailed)
	return st, run.ID
}

// TestExportJSONL: every proposal, rejected ones included, is one line
// that loads as JSON and carries context, proposal, verdict, checks and
// timing.
func TestExportJSONL(t *testing.T) {
	st, id := storedRun(t)
	recs, err := Records(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, "jsonl", recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), b.String())
	}
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		for _, k := range []string{"run_id", "node_id", "proposal", "state", "timing", "problem"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line lacks %s: %s", k, l)
			}
		}
		got = append(got, m)
	}
	if got[0]["verdict"] != "pass" || got[0]["timing"].(map[string]any)["speedup_vs_eager"] != 2.0 {
		t.Errorf("root: %v", got[0])
	}
	if got[1]["verdict"] != "incorrect" || got[1]["context"].(map[string]any)["prompt"] != "make it faster" ||
		got[1]["checks"].([]any)[0].(map[string]any)["detail"] != "max diff 3" {
		t.Errorf("rejected child: %v", got[1])
	}
	if got[2]["state"] != "failed" || got[2]["error"] != "operator timed out" || got[2]["proposal"].(map[string]any)["code"] != "A = 3\n" {
		t.Errorf("failed node: %v", got[2])
	}
}

// TestExportCSV: a header and one row per proposal, with code and notes
// holding commas, quotes and newlines intact.
func TestExportCSV(t *testing.T) {
	st, id := storedRun(t)
	recs, _ := Records(context.Background(), st, id)
	var b bytes.Buffer
	if err := Write(&b, "csv", recs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(rows[0]) != len(csvHeader) {
		t.Fatalf("%d rows of %d fields", len(rows), len(rows[0]))
	}
	if rows[2][9] != "A=2, \"quoted\"\nnewline" || rows[2][11] != "incorrect" {
		t.Errorf("row: %q", rows[2])
	}
	if err := Write(&b, "xml", recs); err == nil {
		t.Error("an unknown format must be an error")
	}
}

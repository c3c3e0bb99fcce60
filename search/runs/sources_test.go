package runs

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// A task's parent and a submitted node can be read back by id, the run's
// reference too; another run's node or an unknown one is refused.
func TestNodeCodeAndReferenceSource(t *testing.T) {
	f := newFixture(t, time.Millisecond)
	m := f.manager(t)
	ctx := context.Background()
	run, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	task := next(t, m, run.ID)
	if code, err := m.NodeCode(ctx, run.ID, task.NodeID); err != nil || code != task.Parent.Code {
		t.Fatalf("parent's code: %q, %v", code, err)
	}
	if ref, err := m.ReferenceSource(ctx, run.ID); err != nil || ref != task.Problem.Reference {
		t.Fatalf("reference: %q, %v", ref, err)
	}
	other, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NodeCode(ctx, other.ID, task.NodeID); err == nil || !strings.Contains(err.Error(), "has no node") {
		t.Errorf("another run's node: %v", err)
	}
	if _, err := m.NodeCode(ctx, run.ID, 999); err == nil || !strings.Contains(err.Error(), "has no node") {
		t.Errorf("an unknown node: %v", err)
	}
	if _, err := m.ReferenceSource(ctx, "r-missing"); err == nil || !strings.Contains(err.Error(), "unknown run") {
		t.Errorf("an unknown run: %v", err)
	}
}

// A node's view carries the harness's warnings, which the search's own
// result has no field for.
func TestViewCarriesWarnings(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"verdict": "pass", "warnings": []string{"noisy timing"}})
	v := viewOf(&search.Node{ID: 1, Result: &search.Result{Verdict: search.VerdictPass, Raw: raw}})
	if !slices.Equal(v.Warnings, []string{"noisy timing"}) || v.Result.Raw != nil {
		t.Errorf("warnings %q, raw %d bytes", v.Warnings, len(v.Result.Raw))
	}
	// Evaluated without warnings: [] on the wire, so the field is in every
	// answer that evaluates; not evaluated: none.
	if v := viewOf(&search.Node{ID: 2, Result: &search.Result{Verdict: search.VerdictPass}}); v.Warnings == nil || len(v.Warnings) != 0 {
		t.Errorf("warnings without a raw result: %#v", v.Warnings)
	}
	if v := viewOf(&search.Node{ID: 3}); v.Warnings != nil {
		t.Errorf("warnings of a node not evaluated: %#v", v.Warnings)
	}
}

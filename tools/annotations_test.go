package tools

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/kevolve/kevolve-mcp/retrieval"
)

// Every tool's annotations say what it does (MCP: readOnlyHint = does not
// modify its environment; openWorldHint = reaches outside the server).
// Tools that run the code they are given (compile_kernel imports a Triton
// source; run, profile and sol with a candidate run it) are not read-only;
// Codex asks before calling those, so a false "read-only" would skip that.
func TestToolAnnotationsHonest(t *testing.T) {
	want := map[string]struct{ readOnly, destructive, openWorld bool }{
		"device_info":      {true, false, false},
		"compile_kernel":   {false, false, false},
		"run_kernel":       {false, false, false},
		"profile_kernel":   {false, false, false},
		"sol_analysis":     {false, false, false},
		"search_knowledge": {true, false, false},
		"evolve":           {false, false, false},
		"evolve_start":     {false, false, false},
		"evolve_next":      {false, false, false},
		"evolve_submit":    {false, false, false},
		"evolve_status":    {true, false, false},
		"evolve_stop":      {false, true, false},
		"evolve_resume":    {false, false, false},
		"evolve_best":      {true, false, false},
		"model_profile":    {false, false, false},
		"deploy":           {false, false, false},
		"verify_model":     {false, false, false},
	}
	tools := All(Deps{})
	if len(tools) != len(want) {
		t.Errorf("%d tools, %d in this table: add the new tool's expected annotations", len(tools), len(want))
	}
	for _, st := range tools {
		a, w := st.Tool.Annotations, want[st.Tool.Name]
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: an annotation is unset", st.Tool.Name)
			continue
		}
		if *a.ReadOnlyHint != w.readOnly || *a.DestructiveHint != w.destructive || *a.OpenWorldHint != w.openWorld {
			t.Errorf("%s: readOnly %v destructive %v openWorld %v; want %+v", st.Tool.Name,
				*a.ReadOnlyHint, *a.DestructiveHint, *a.OpenWorldHint, w)
		}
	}
}

// search_knowledge is open-world when its queries go to a remote embedder
// (here an Ollama-compatible server on loopback), closed with the built-in one.
func TestSearchKnowledgeOpenWorldWithRemoteEmbedder(t *testing.T) {
	h := retrieval.NewHashEmbedder(64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		out, _ := h.Embed(r.Context(), req.Input)
		json.NewEncoder(w).Encode(map[string]any{"embeddings": out})
	}))
	defer srv.Close()
	cases := []struct {
		name string
		emb  retrieval.Embedder
		want bool
	}{{"built-in", nil, false}, {"ollama", retrieval.NewOllama(srv.URL, "m"), true}}
	for _, c := range cases {
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "kb.db")+"?_journal_mode=WAL")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ix, err := retrieval.Open(context.Background(), db, c.emb)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := *SearchKnowledge(ix).Tool.Annotations.OpenWorldHint; got != c.want {
			t.Errorf("%s embedder: openWorldHint %v, want %v", c.name, got, c.want)
		}
	}
}

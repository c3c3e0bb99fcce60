package retrieval

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashEmbedder(t *testing.T) {
	h := NewHashEmbedder(0)
	ctx := context.Background()
	texts := []string{
		"coalesced global memory access with 16-byte vectorized loads",
		"coalescing global memory loads, vectorized 16 byte accesses",
		"fp8 scaling factors for tensor core GEMM",
		"",
	}
	a, err := h.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Embed(ctx, texts)
	for i := range a {
		if len(a[i]) != 512 {
			t.Fatalf("dims %d", len(a[i]))
		}
		if n := dot(a[i], a[i]); math.Abs(n-1) > 1e-5 {
			t.Errorf("text %d: norm^2 %v, want 1", i, n)
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("text %d not deterministic", i)
			}
		}
	}
	// Paraphrases must be closer than unrelated text: the trigram features
	// are what make "coalesced" and "coalescing" meet.
	if near, far := dot(a[0], a[1]), dot(a[0], a[2]); near < 0.4 || far > near/2 {
		t.Errorf("similarity paraphrase %.3f, unrelated %.3f", near, far)
	}
}

// TestHTTPEmbedders runs both clients against real HTTP servers that speak
// the Ollama and OpenAI embedding APIs, and checks requests, batching,
// ordering, auth and error reporting.
func TestHTTPEmbedders(t *testing.T) {
	vec := func(s string) []float32 { return []float32{float32(len(s)), 1, 0} }
	var calls int
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		if req.Model != "nomic-embed-text" {
			w.WriteHeader(404)
			json.NewEncoder(w).Encode(map[string]string{"error": "model not found"})
			return
		}
		var out [][]float32
		for _, s := range req.Input {
			out = append(out, vec(s))
		}
		json.NewEncoder(w).Encode(map[string]any{"embeddings": out})
	}))
	defer ollama.Close()
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		// Answer in reverse order: clients must use "index".
		var data []map[string]any
		for i := len(req.Input) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"index": i, "embedding": vec(req.Input[i]), "object": "embedding"})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	defer openai.Close()

	texts := make([]string, 150)
	for i := range texts {
		texts[i] = strings.Repeat("x", i+1)
	}
	tests := []struct {
		name    string
		emb     Embedder
		wantErr string
	}{
		{"ollama", NewOllama(ollama.URL, "nomic-embed-text"), ""},
		{"ollama unknown model", NewOllama(ollama.URL, "nope"), "model not found"},
		{"openai", NewOpenAICompat(openai.URL+"/v1/", "text-embedding-3-small", "sk-test"), ""},
		{"openai bad key", NewOpenAICompat(openai.URL+"/v1", "m", "wrong"), "401"},
		{"unreachable", NewOllama("http://127.0.0.1:1", "m"), "embedding request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.emb.Embed(context.Background(), texts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(got), len(texts))
			}
			for i, v := range got {
				if v[0] != float32(i+1) {
					t.Fatalf("vector %d is for another text: %v", i, v)
				}
			}
		})
	}
	if calls < 3 { // 150 texts in batches of 64, plus the failing model
		t.Errorf("ollama saw %d requests; batching not used", calls)
	}
}

// TestOpenWithHTTPEmbedder indexes through a real HTTP embedding server:
// the stored vectors come from it and the query is embedded by it too.
func TestOpenWithHTTPEmbedder(t *testing.T) {
	h := NewHashEmbedder(64)
	var texts int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		texts += len(req.Input)
		out, _ := h.Embed(r.Context(), req.Input)
		json.NewEncoder(w).Encode(map[string]any{"embeddings": out})
	}))
	defer srv.Close()
	ctx := context.Background()
	db := openDB(t)
	ix, err := OpenSources(ctx, db, NewOllama(srv.URL, "m"), fixtureSource(t))
	if err != nil {
		t.Fatal(err)
	}
	if !ix.RemoteEmbedder() {
		t.Error("an index embedded by an Ollama server says its embedder is local")
	}
	indexed := texts
	if indexed < ix.Stats().Passages {
		t.Fatalf("server embedded %d texts for %d passages", indexed, ix.Stats().Passages)
	}
	r, err := ix.Search(ctx, Query{Text: "bank conflicts"})
	if err != nil || len(r.Results) == 0 {
		t.Fatalf("search: %v %+v", err, r)
	}
	if texts != indexed+1 {
		t.Errorf("query embedded %d texts, want 1", texts-indexed)
	}
}

func TestParseEmbedder(t *testing.T) {
	env := func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-x"}[k] }
	tests := []struct{ spec, name, err string }{
		{"", "hash-v1-512", ""},
		{"hash:256", "hash-v1-256", ""},
		{"hash:x", "", "dims"},
		{"ollama:nomic-embed-text", "ollama:nomic-embed-text", ""},
		{"ollama:m@http://gpu:11434", "ollama:m", ""},
		{"openai:text-embedding-3-small@http://localhost:8000/v1", "openai:http://localhost:8000/v1:text-embedding-3-small", ""},
		{"openai:", "", "want openai:MODEL"},
		{"bert", "", "unknown kind"},
	}
	for _, tt := range tests {
		e, err := ParseEmbedder(tt.spec, env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || e.Name() != tt.name {
			t.Errorf("%q: %v %v, want %s", tt.spec, e, err, tt.name)
		}
	}
	if e, _ := ParseEmbedder("openai:m", env); e.(*OpenAICompat).key != "sk-x" {
		t.Error("API key not taken from the environment")
	}
}

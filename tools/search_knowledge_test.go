package tools

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// knowledgeServer indexes the whole embedded knowledge base into a fresh
// SQLite file and serves search_knowledge and the kb:// resources from it.
func knowledgeServer(t testing.TB) (*client.Client, *retrieval.Index) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "kb.db")+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ix, err := retrieval.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer("kb-test", "0", server.WithInputSchemaValidation(),
		server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false))
	srv.AddTools(SearchKnowledge(ix))
	res, tmpl := KnowledgeResources(ix)
	srv.AddResources(res...)
	srv.AddResourceTemplates(tmpl)
	return toolstest.Connect(t, srv), ix
}

func TestSearchKnowledgeOverMCP(t *testing.T) {
	c, ix := knowledgeServer(t)
	tests := []struct {
		name    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, r retrieval.Response)
	}{
		{name: "device-scoped diagnosis", args: map[string]any{"diagnosis": "memory-bound, 30% occupancy", "device": "h100", "k": 5},
			check: func(t *testing.T, r retrieval.Response) {
				if len(r.Results) != 5 || r.Device == nil || r.Device.Arch != "hopper" {
					t.Fatalf("%+v", r)
				}
				if !slices.Contains(r.Bottlenecks, "memory-bound") {
					t.Errorf("bottlenecks %v", r.Bottlenecks)
				}
				for _, x := range r.Results {
					if x.Scope == "other" {
						t.Errorf("out-of-scope %s in the top 5", x.Path)
					}
				}
			}},
		{name: "operator context brings constraints", args: map[string]any{"query": "fast row softmax", "operator": "softmax"},
			check: func(t *testing.T, r retrieval.Response) {
				if len(r.Constraints) == 0 {
					t.Fatal("no constraints for an operator context")
				}
				for _, x := range r.Constraints {
					if !strings.HasPrefix(x.Path, "constraints/") {
						t.Errorf("constraint list holds %s", x.Path)
					}
				}
			}},
		{name: "error text", args: map[string]any{"error_text": "CUDA error: an illegal memory access was encountered", "language": "triton"},
			check: func(t *testing.T, r retrieval.Response) {
				if len(r.Results) == 0 || r.Results[0].Passage == "" {
					t.Fatalf("%+v", r)
				}
			}},
		// Issue 36: (cpu, softmax, c) answered 22.6 K, 18.9 K of it constraints.
		{name: "answer within the default budget", args: map[string]any{"device": "cpu", "operator": "softmax", "language": "c"},
			check: func(t *testing.T, r retrieval.Response) {
				if n := jsonSize(t, r); n > retrieval.DefaultBudget || len(r.Results) == 0 || len(r.Constraints) == 0 {
					t.Fatalf("%d characters, %d results, %d constraints", n, len(r.Results), len(r.Constraints))
				}
				if !strings.Contains(r.Omitted, "kb://") {
					t.Errorf("omitted %q does not say where the cut text is", r.Omitted)
				}
			}},
		{name: "a larger budget keeps the passages", args: map[string]any{"device": "cpu", "operator": "softmax", "language": "c", "max_chars": 60000},
			check: func(t *testing.T, r retrieval.Response) {
				if r.Omitted != "" || len(r.Constraints) == 0 || r.Constraints[0].Passage == "" {
					t.Fatalf("omitted %q, constraints %d", r.Omitted, len(r.Constraints))
				}
			}},
		{name: "constraints for the language only", args: map[string]any{"operator": "softmax", "language": "triton", "max_chars": 60000},
			check: func(t *testing.T, r retrieval.Response) {
				for _, x := range r.Constraints {
					if x.Path == "constraints/kevolve-fast-loaders.md" {
						t.Errorf("a constraint for cuda and c in a triton answer: %s", x.Path)
					}
				}
			}},
		{name: "budget out of range", args: map[string]any{"query": "tiling", "max_chars": 500000}, wantErr: "max_chars must be between"},
		{name: "nothing to search", args: map[string]any{"query": "the"}, wantErr: "nothing to search for"},
		{name: "k out of range", args: map[string]any{"query": "tiling", "k": 500}, wantErr: "k must be between"},
		{name: "unknown device", args: map[string]any{"query": "tiling", "device": "tpu"}, wantErr: "unknown device"},
		{name: "schema validation", args: map[string]any{"query": "tiling", "k": "five"}, wantErr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := toolstest.Call(t, c, "search_knowledge", tt.args)
			if tt.check == nil {
				if !res.IsError || !strings.Contains(toolstest.Text(res), tt.wantErr) {
					t.Fatalf("want a tool error %q, got %s", tt.wantErr, toolstest.Text(res))
				}
				return
			}
			var r retrieval.Response
			toolstest.Decode(t, res, &r)
			tt.check(t, r)
		})
	}

	// Every document is a listed resource, readable by its URI.
	ctx := context.Background()
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != len(ix.List()) {
		t.Fatalf("%d resources for %d documents", len(list.Resources), len(ix.List()))
	}
	tmpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tmpls.ResourceTemplates) != 1 {
		t.Fatalf("templates: %v %+v", err, tmpls)
	}
	doc := ix.List()[0]
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "kb://" + doc.Path
	got, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	text := got.Contents[0].(mcp.TextResourceContents).Text
	if !strings.Contains(text, doc.Title) || len(text) < 200 {
		t.Errorf("resource %s: %q", req.Params.URI, text)
	}
	req.Params.URI = "kb://guidance/no-such-doc.md"
	if _, err := c.ReadResource(ctx, req); err == nil {
		t.Error("a missing document was read")
	}
}

// latencyQueries are typical agent calls: free text, device-scoped,
// diagnosis-driven, operator context, error text.
var latencyQueries = []map[string]any{
	{"query": "shared memory bank conflicts padding swizzle"},
	{"query": "TMA and wgmma pipeline", "device": "h100"},
	{"diagnosis": "memory-bound, 30% occupancy", "device": "h100", "bottlenecks": []any{"memory-bound", "occupancy-limited"}},
	{"query": "online softmax for attention", "operator": "attention", "device": "mi300x"},
	{"error_text": "triton.compiler.errors.CompilationError: arange's range must be a power of 2", "language": "triton"},
	{"query": "AVX-512 vectorized reduction with OpenMP", "device": "cpu", "k": 10},
	{"query": "split-K for skinny GEMM", "operator": "gemm", "device": "b200"},
	{"query": "fp8 scaling accumulation", "bottlenecks": []any{"numerics"}},
}

// p95Search calls search_knowledge n times through the in-process client
// and returns the 50th and 95th percentile latency.
func p95Search(t testing.TB, c *client.Client, n int) (p50, p95 time.Duration) {
	var lat []time.Duration
	for i := range n {
		args := latencyQueries[i%len(latencyQueries)]
		start := time.Now()
		res := toolstest.Call(t, c, "search_knowledge", args)
		lat = append(lat, time.Since(start))
		if res.IsError {
			t.Fatalf("%v: %s", args, toolstest.Text(res))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*95/100]
}

// TestSearchKnowledgeLatency is the acceptance figure: p95 of a
// search_knowledge call over MCP with the whole knowledge base <= 20 ms.
func TestSearchKnowledgeLatency(t *testing.T) {
	c, ix := knowledgeServer(t)
	p95Search(t, c, 16) // warm-up
	p50, p95 := p95Search(t, c, 400)
	t.Logf("search_knowledge over MCP, %d documents: p50 %v, p95 %v", len(ix.List()), p50, p95)
	if p95 > 20*time.Millisecond {
		t.Errorf("p95 %v exceeds 20 ms", p95)
	}
}

func BenchmarkSearchKnowledgeMCP(b *testing.B) {
	c, _ := knowledgeServer(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res := toolstest.Call(b, c, "search_knowledge", latencyQueries[i%len(latencyQueries)])
		if res.IsError {
			b.Fatal(toolstest.Text(res))
		}
	}
	b.StopTimer()
	p50, p95 := p95Search(b, c, 200)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

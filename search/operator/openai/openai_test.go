package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// endpoint is a small OpenAI-compatible chat server on loopback. Each model
// name behaves as its name says; replies come from testdata/replies.
type endpoint struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
	prompts  []string
	served   int // total_tokens of every answer sent
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{requests: map[string]int{}}
	reply := map[string]string{"file-model": read(t, "replies/file.md"), "diff-model": read(t, "replies/diff.md"),
		"bad-model": read(t, "replies/malformed.md"), "baddiff-model": read(t, "replies/baddiff.md"), "busy-model": read(t, "replies/file.md"),
		"dup-model": read(t, "replies/file.md")}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.requests[req.Model]++
		n := e.requests[req.Model]
		if len(req.Messages) > 0 {
			e.prompts = append(e.prompts, req.Messages[len(req.Messages)-1].Content)
		}
		e.mu.Unlock()
		switch req.Model {
		case "hang-model":
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		case "busy-model":
			if n == 1 {
				w.Header().Set("retry-after-ms", "20")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`)
				return
			}
		}
		if r.Header.Get("Authorization") != "Bearer test" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
			return
		}
		content, ok := reply[req.Model]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"model %s not found"}}`, req.Model)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		e.mu.Lock()
		e.served += 1200 + len(req.Model)
		e.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": 1000 + len(req.Model), "completion_tokens": 200, "total_tokens": 1200 + len(req.Model)},
		})
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) count(model string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests[model]
}

func ctxFor(t *testing.T) search.Context {
	parent := &search.Node{ID: 1, Code: read(t, "parent.py"), State: search.NodeDone, Operator: "start",
		Result: &search.Result{Verdict: "pass", Correct: true, TimeS: 1e-3, EagerS: 1e-3, Fitness: 1}}
	return search.Context{Run: &search.Run{ID: "r"}, Problem: search.Problem{Name: "demo/scale", Target: "cpu", Language: "c"},
		Parents: []*search.Node{parent}, Graph: search.NewGraph([]*search.Node{parent})}
}

func op(t *testing.T, e *endpoint, models string, deadline time.Duration) *Op {
	t.Helper()
	var specs []string
	for _, m := range strings.Split(models, ",") {
		specs = append(specs, m+"@"+e.URL+"/v1")
	}
	o, err := New("openai:"+strings.Join(specs, ","), Config{Deadline: deadline, APIKey: "test",
		Context: ctxOpts()})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func propose(o *Op, c search.Context) (search.Proposal, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline())
	defer cancel()
	t0 := time.Now()
	p, err := o.Propose(ctx, c)
	return p, time.Since(t0), err
}

func TestReplies(t *testing.T) {
	e := newEndpoint(t)
	c := ctxFor(t)
	t.Run("whole file", func(t *testing.T) {
		p, _, err := propose(op(t, e, "file-model", 10*time.Second), c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Code, "#pragma omp parallel for") || !strings.HasPrefix(p.Code, "import torch") || p.Tokens != 1210 {
			t.Errorf("code %q tokens %d", p.Code, p.Tokens)
		}
		if !strings.HasPrefix(p.Notes, "file-model (file): Parallelized") {
			t.Errorf("notes %q", p.Notes)
		}
		var in Input
		json.Unmarshal(p.Inputs, &in)
		if in.Model != "file-model" || in.Answer != "file" || len(in.ContextHash) != 64 || !strings.Contains(in.Context, "```diff block") {
			t.Errorf("inputs %+v", in)
		}
	})
	t.Run("diff", func(t *testing.T) {
		p, _, err := propose(op(t, e, "diff-model", 10*time.Second), c)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(strings.Replace(read(t, "parent.py"), "THREADS = 1", "THREADS = 2", 1),
			"    for (long i", "    #pragma omp simd\n    for (long i", 1)
		if p.Code != want {
			t.Errorf("diff applied wrong:\n%s", p.Code)
		}
	})
	for _, m := range []string{"bad-model", "baddiff-model"} {
		t.Run(m, func(t *testing.T) {
			_, _, err := propose(op(t, e, m, 10*time.Second), c)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v", err)
			}
		})
	}
	t.Run("429 then answer", func(t *testing.T) {
		p, _, err := propose(op(t, e, "busy-model", 10*time.Second), c)
		if err != nil || !strings.Contains(p.Code, "ModelNew") || e.count("busy-model") != 2 {
			t.Fatalf("%v after %d requests", err, e.count("busy-model"))
		}
	})
	t.Run("hang", func(t *testing.T) {
		o := op(t, e, "hang-model", 1500*time.Millisecond)
		_, took, err := propose(o, c)
		if err == nil || took > 5*time.Second {
			t.Fatalf("%v after %s", err, took)
		}
		if !strings.Contains(err.Error(), "deadline") {
			t.Errorf("error does not say deadline: %v", err)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		o, err := New("openai:file-model@"+e.URL+"/v1", Config{Deadline: 10 * time.Second, APIKey: "wrong", Context: ctxOpts()})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = propose(o, c)
		if !errors.Is(err, search.ErrOperatorUnavailable) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		_, _, err := propose(op(t, e, "nope", 10*time.Second), c)
		if err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("%v", err)
		}
	})
}

func TestParse(t *testing.T) {
	ms, err := Parse("openai:qwen3-coder@http://vllm:8000/v1,gpt-4.1-mini,qwen2.5-coder:7b@http://localhost:11434/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Model{{"qwen3-coder", "http://vllm:8000/v1"}, {"gpt-4.1-mini", ""}, {"qwen2.5-coder:7b", "http://localhost:11434/v1"}}
	if fmt.Sprint(ms) != fmt.Sprint(want) {
		t.Errorf("%v", ms)
	}
	for _, bad := range []string{"openai:", "openai: ", "openai:@http://x", "gpt"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestBanditPrefersTheArmThatPays drives two models through a graph: the
// diff model's children are faster than their parents, the bad model's
// answers fail. After both are tried the bandit keeps choosing the diff
// model, and a new operator (a resumed run) built from the same nodes
// makes the same choice.
func TestBanditPrefersTheArmThatPays(t *testing.T) {
	e := newEndpoint(t)
	o := op(t, e, "bad-model,diff-model", 10*time.Second)
	c := ctxFor(t)
	g := c.Graph
	next := int64(2)
	for i := 0; i < 8; i++ {
		c.Graph = g
		p, _, err := propose(o, c)
		parent := c.Parents[0]
		n := &search.Node{ID: next, Parents: []int64{parent.ID}, Code: p.Code, Operator: o.Name(), OperatorInput: p.Inputs,
			State: search.NodeDone, Cost: search.Cost{Tokens: p.Tokens},
			Result: &search.Result{Verdict: "pass", Correct: true, Fitness: parent.Fitness() * 1.5}}
		if err != nil {
			// The bad model: the run loop records a failed node.
			var pe *search.ProposalError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ProposalError: %v", err)
			}
			n.Code, n.OperatorInput, n.State, n.Result, n.Cost.Tokens = parent.Code, pe.Inputs, search.NodeFailed, nil, pe.Tokens
		}
		next++
		g.Add(n)
	}
	if b, d := e.count("bad-model"), e.count("diff-model"); b > 3 || d < 5 {
		t.Errorf("bad model asked %d times, diff model %d", b, d)
	}
	fresh := op(t, e, "bad-model,diff-model", 10*time.Second)
	if got := fresh.pick(g); got != 1 {
		t.Errorf("a resumed operator picks arm %d", got)
	}
	arms := stats(g, o.Name(), []string{"bad-model", "diff-model"})
	if arms[1].plays < 5 || arms[0].plays == 0 || arms[0].reward != 0 {
		t.Errorf("arms %+v", arms)
	}
}

func TestChooseIsCostAware(t *testing.T) {
	// Same rewards, one arm 10x the tokens: the cheap one wins.
	arms := []arm{{plays: 20, reward: 12, tokens: 20 * 10000}, {plays: 20, reward: 12, tokens: 20 * 1000}}
	if got := choose(arms, 0.5); got != 1 {
		t.Errorf("chose %d", got)
	}
	// Unplayed arms first.
	if got := choose([]arm{{plays: 5, reward: 5}, {}}, 0.5); got != 1 {
		t.Errorf("chose %d", got)
	}
}

func ctxOpts() brief.Options { return brief.Options{Budget: 4000} }

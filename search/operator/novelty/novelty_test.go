package novelty

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

const base = `"""RMSNorm kernel."""
import torch
from kevolve import load_c

SRC = r'''
#include <math.h>
void f(const float* x, float* y, long n) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) y[i] = x[i] * 2.0f;  /* scale */
}
'''
BLOCK = 256  # threads per block

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        load_c(SRC).f(x, y, x.numel())
        return y
`

func TestSimilarity(t *testing.T) {
	cases := []struct {
		name   string
		code   string
		reject bool
	}{
		{"identical", base, true},
		{"comments and blank lines", strings.ReplaceAll(strings.ReplaceAll(base, "# threads per block", "# tuned"), "\n\n", "\n\n\n"), true},
		{"new docstring", strings.Replace(base, "RMSNorm kernel.", "A better kernel, surely.", 1), true},
		{"pragma changed", strings.Replace(base, "schedule(static)", "schedule(dynamic, 8)", 1), false},
		{"block size changed", strings.Replace(base, "BLOCK = 256", "BLOCK = 512", 1), false},
		{"different kernel", "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clone()\n", false},
	}
	for _, tc := range cases {
		s := Similarity(base, tc.code)
		if got := s >= DefaultThreshold; got != tc.reject {
			t.Errorf("%s: similarity %.3f, reject %v, want %v", tc.name, s, got, tc.reject)
		}
	}
}

// scripted answers a fixed sequence of proposals and records what it saw.
type scripted struct {
	answers  []string
	seen     []search.Context
	deadline time.Duration
}

func (s *scripted) Name() string            { return "scripted" }
func (s *scripted) Deadline() time.Duration { return s.deadline }
func (s *scripted) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	s.seen = append(s.seen, c)
	i := len(s.seen) - 1
	if i >= len(s.answers) {
		return search.Proposal{}, errors.New("out of answers")
	}
	if s.answers[i] == "HANG" {
		<-ctx.Done()
		return search.Proposal{}, ctx.Err()
	}
	return search.Proposal{Code: s.answers[i], Notes: "try"}, nil
}

func graphWith(code string) search.Context {
	n := &search.Node{ID: 7, Code: code, State: search.NodeDone}
	return search.Context{Parents: []*search.Node{n}, Graph: search.NewGraph([]*search.Node{n}), Seed: 100}
}

func TestRejectsAndAsksAgain(t *testing.T) {
	novel := strings.Replace(base, "BLOCK = 256", "BLOCK = 1024", 1)
	in := &scripted{answers: []string{base, strings.ReplaceAll(base, "# threads per block", ""), novel}, deadline: time.Second}
	op := &Op{Inner: in, Retries: 2}
	p, err := op.Propose(context.Background(), graphWith(base))
	if err != nil {
		t.Fatal(err)
	}
	if p.Code != novel || !strings.Contains(p.Notes, "after 2 near-duplicate") {
		t.Errorf("got %q", p.Notes)
	}
	if len(in.seen) != 3 || in.seen[1].Seed == in.seen[0].Seed || !strings.Contains(in.seen[2].Feedback, "node 7") {
		t.Errorf("retries did not tell the operator: %+v", in.seen[2].Feedback)
	}
}

func TestGivesUpAfterRetries(t *testing.T) {
	in := &scripted{answers: []string{base, base, base, base}, deadline: time.Second}
	_, err := (&Op{Inner: in, Retries: 1}).Propose(context.Background(), graphWith(base))
	if err == nil || !strings.Contains(err.Error(), "2 proposals rejected") || len(in.seen) != 2 {
		t.Fatalf("%v after %d asks", err, len(in.seen))
	}
}

func TestEachAskHasItsDeadline(t *testing.T) {
	in := &scripted{answers: []string{"HANG"}, deadline: 200 * time.Millisecond}
	t0 := time.Now()
	_, err := Wrap(in).Propose(context.Background(), graphWith(base))
	if err == nil || time.Since(t0) > 2*time.Second {
		t.Fatalf("%v after %s", err, time.Since(t0))
	}
}

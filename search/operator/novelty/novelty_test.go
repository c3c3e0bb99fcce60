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

// similarity is the normalized-token similarity of two kernels in [0,1],
// as Op measures it.
func similarity(a, b string) float64 { return jaccard(shingles(a), shingles(b)) }

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
		s := similarity(base, tc.code)
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
	return search.Proposal{Code: s.answers[i], Notes: "try", Tokens: 100 * (i + 1)}, nil
}

// graphWith is a run whose node 7 has code and passed.
func graphWith(code string) search.Context { return graphOf(code, search.VerdictPass) }

func graphOf(code, verdict string) search.Context {
	n := &search.Node{ID: 7, Code: code, State: search.NodeDone, Result: &search.Result{Verdict: verdict}}
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
	if p.Code != novel || !strings.Contains(p.Notes, "after 2 duplicate") {
		t.Errorf("got %q", p.Notes)
	}
	// The two rejected asks' tokens (100, 200) count with the answer's (300).
	if p.Tokens != 600 || len(p.Rejected) != 2 || p.Rejected[0].Tokens != 100 || p.Rejected[1].Try != 2 || p.Rejected[0].SimilarTo != 7 {
		t.Errorf("tokens %d, rejected %+v", p.Tokens, p.Rejected)
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
	var pe *search.ProposalError
	if !errors.As(err, &pe) || pe.Tokens != 300 || len(pe.Rejected) != 2 {
		t.Fatalf("the rejected asks' cost is lost: %#v", err)
	}
}

func TestEachAskHasItsDeadline(t *testing.T) {
	in := &scripted{answers: []string{"HANG"}, deadline: 200 * time.Millisecond}
	t0 := time.Now()
	_, err := (&Op{Inner: in}).Propose(context.Background(), graphWith(base))
	if err == nil || time.Since(t0) > 2*time.Second {
		t.Fatalf("%v after %s", err, time.Since(t0))
	}
}

// cStart is a C start kernel with a tunable, as the corpus writes them.
const cStart = `import torch
from kevolve import load_c

TILE = 32
TUNABLES = {"TILE": [16, 32, 64]}

SRC = r'''
void scale(const float* x, float* y, long n, int tile) {
    for (long i = 0; i < n; i += tile)
        for (long j = i; j < i + tile && j < n; ++j) y[j] = x[j] * 0.5f;
}
'''

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        load_c(SRC).scale(x, y, x.numel(), TILE)
        return y
`

// TestNoveltyRule is issue 20's acceptance: near duplicates only of
// passing kernels with the same literals; exact duplicates of any node.
func TestNoveltyRule(t *testing.T) {
	broken := strings.Replace(cStart, "y[j] = x[j] * 0.5f;", "y[j] = x[j] * 0.5f", 1)
	cases := []struct {
		name     string
		node     string // node 7's code
		verdict  string // node 7's verdict
		proposal string
		novel    bool
	}{
		{"fix of a failed start (one semicolon)", broken, search.VerdictCompileError, cStart, true},
		{"the failed start again", broken, search.VerdictCompileError, broken, false},
		{"the failed start reformatted", broken, search.VerdictCompileError, strings.ReplaceAll(broken, "\n\n", "\n\n\n# note\n"), false},
		{"one tunable of a passing start", cStart, search.VerdictPass, strings.Replace(cStart, "TILE = 32", "TILE = 64", 1), true},
		{"one constant in the C source", cStart, search.VerdictPass, strings.Replace(cStart, "0.5f", "0.25f", 1), true},
		{"one string changed", cStart, search.VerdictPass, strings.Replace(cStart, `"TILE": [16`, `"TILE": [8`, 1), true},
		{"passing start renamed", cStart, search.VerdictPass, strings.ReplaceAll(cStart, "tile)", "t)"), false},
		{"passing start with comments", cStart, search.VerdictPass, strings.Replace(cStart, "TILE = 32", "TILE = 32  # tuned", 1), false},
		{"a near copy of an incorrect kernel", cStart, search.VerdictIncorrect, strings.ReplaceAll(cStart, "tile)", "t)"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &scripted{answers: []string{tc.proposal}, deadline: time.Second}
			// A short kernel: a rename changes 8% of its trigrams.
			p, err := (&Op{Inner: in, Retries: -1, Threshold: 0.9}).Propose(context.Background(), graphOf(tc.node, tc.verdict))
			if got := err == nil; got != tc.novel {
				t.Fatalf("novel %v, want %v (err %v, similarity %.3f)", got, tc.novel, err, similarity(tc.node, tc.proposal))
			}
			if tc.novel && p.Code != tc.proposal {
				t.Errorf("proposal changed")
			}
		})
	}
}

func TestLiterals(t *testing.T) {
	got := strings.Join(Literals("x2 = 1.5e-3 + 0.0f  # 7\ns = 'a b' + \"c\"\n/* 9 */ y = f(x2, 256)\n"), " ")
	if want := `1.5e-3 0.0f 'a b' "c" 256`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

package tuner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

const declared = `import torch
BLOCK = 128  # rows per program
SCHEDULE = "static"
ACC: str = 'double'
TUNABLES = {
    "BLOCK": [64, 128, 256],   # a comment, with a comma
    'SCHEDULE': ["static", "dynamic"],
    "ACC": ["double", "float"],
    "MISSING": [1, 2],
}
def f():
    BLOCK = 3  # indented: not the module-level one
`

func TestParseDeclared(t *testing.T) {
	s, err := Parse(declared)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Declared || len(s.Tunables) != 3 || len(s.Skipped) != 1 || !strings.HasPrefix(s.Skipped[0], "MISSING") {
		t.Fatalf("space %+v", s)
	}
	cur := s.Current()
	if cur["BLOCK"] != "128" || cur["SCHEDULE"] != `"static"` || cur["ACC"] != `"double"` {
		t.Fatalf("current %v", cur)
	}
	out, err := s.Apply(declared, Assignment{"BLOCK": "256", "ACC": `"float"`})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BLOCK = 256  # rows per program\n", `ACC: str = "float"`, "    BLOCK = 3", `SCHEDULE = "static"`} {
		if !strings.Contains(out, want) {
			t.Errorf("rewritten code lacks %q:\n%s", want, out)
		}
	}
	if _, err := s.Apply(declared, Assignment{"BLOCK": "7"}); err == nil {
		t.Error("a value outside TUNABLES must be refused")
	}
}

func TestParseErrors(t *testing.T) {
	for name, code := range map[string]string{
		"unbalanced": "X = 1\nTUNABLES = {\"X\": [1, 2]\n",
		"not a list": "X = 1\nTUNABLES = {\"X\": 3}\n",
		"bare key":   "X = 1\nTUNABLES = {X: [1, 2]}\n",
	} {
		if _, err := Parse(code); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

const triton = `import triton
@triton.jit
def k(x, BLOCK_SIZE: tl.constexpr):
    pass
def run(x):
    if BLOCK_SIZE == 64: pass
    k[(1,)](x, BLOCK_SIZE=128, num_warps=4,
            num_stages=2)
    k[(1,)](x,
        BLOCK_SIZE=256)
    load_cuda(SRC).f(x, grid=(1,), block=(256,), shared_mem=0)
`

func TestParseLaunchSites(t *testing.T) {
	s, err := Parse(triton)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tn := range s.Tunables {
		names = append(names, tn.Name+"="+tn.Values[tn.Current])
	}
	if got := strings.Join(names, " "); got != "BLOCK_SIZE#0=128 num_warps#0=4 num_stages#0=2 BLOCK_SIZE#1=256 block#0=256" {
		t.Fatalf("sites: %s", got)
	}
	out, err := s.Apply(triton, Assignment{"BLOCK_SIZE#1": "512", "num_warps#0": "8", "block#0": "128"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BLOCK_SIZE=128, num_warps=8", "BLOCK_SIZE=512)", "block=(128,)"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// The tuner never proposes a code already in the graph, walks the whole
// small space before it says it is exhausted, and proposes the same way
// for the same seed (so a resumed run repeats its choices).
func TestProposeCoversSpaceWithoutRepeats(t *testing.T) {
	code := "A = 1\nB = 'x'\nTUNABLES = {\"A\": [1, 2, 3], \"B\": ['x', 'y']}\n"
	root := &search.Node{ID: 1, Code: code, Hash: search.NormalizedHash(code), State: search.NodeDone}
	g := search.NewGraph([]*search.Node{root})
	tu := New()
	seen := map[string]bool{root.Hash: true}
	for i := 0; i < 5; i++ {
		p, err := tu.Propose(context.Background(), search.Context{Parents: []*search.Node{root}, Graph: g, Seed: int64(i)})
		if err != nil {
			t.Fatalf("proposal %d: %v", i, err)
		}
		p2, _ := tu.Propose(context.Background(), search.Context{Parents: []*search.Node{root}, Graph: g, Seed: int64(i)})
		if p2.Code != p.Code {
			t.Fatal("same graph and seed must give the same proposal")
		}
		h := search.NormalizedHash(p.Code)
		if seen[h] {
			t.Fatalf("proposal %d repeats a tried code", i)
		}
		seen[h] = true
		g.Add(&search.Node{ID: int64(i + 2), Parents: []int64{1}, Code: p.Code, Hash: h})
	}
	_, err := tu.Propose(context.Background(), search.Context{Parents: []*search.Node{root}, Graph: g, Seed: 9})
	if !errors.Is(err, search.ErrExhausted) {
		t.Fatalf("6 of 6 assignments tried: want ErrExhausted, got %v", err)
	}
	if _, err := tu.Propose(context.Background(), search.Context{Parents: []*search.Node{{Code: "x = 1\n"}}}); !errors.Is(err, ErrNoTunables) {
		t.Fatalf("no tunables: %v", err)
	}
}

// The first moves from a node are its nearest neighbours, one knob each.
func TestProposeStartsWithCoordinateMoves(t *testing.T) {
	code := "A = 4\nB = 4\nTUNABLES = {\"A\": [1, 2, 4, 8, 16], \"B\": [1, 2, 4, 8, 16]}\n"
	root := &search.Node{ID: 1, Code: code, Hash: search.NormalizedHash(code)}
	g := search.NewGraph([]*search.Node{root})
	tu := &Tuner{} // no random restarts
	p, err := tu.Propose(context.Background(), search.Context{Parents: []*search.Node{root}, Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Code, "A = 8\nB = 4") {
		t.Fatalf("first move should be A 4->8:\n%s", p.Code)
	}
}

// After a step that paid, the next step the same way along the same knob
// comes first; after one that did not, the usual coordinate order.
func TestProposePatternMoveFollowsAPayingStep(t *testing.T) {
	gpCode := "A = 1\nB = 4\nTUNABLES = {\"A\": [1, 2, 4, 8], \"B\": [1, 2, 4, 8]}\n"
	pCode := strings.Replace(gpCode, "A = 1", "A = 2", 1)
	for _, tc := range []struct {
		name             string
		gpFit, parentFit float64
		move, want       string
	}{
		{"paid", 1, 1.5, "pattern", "A = 4\nB = 4"},
		{"did not pay", 1.5, 1, "coordinate", "A = 4\nB = 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gp := &search.Node{ID: 1, Code: gpCode, Hash: search.NormalizedHash(gpCode), State: search.NodeDone, Result: &search.Result{Correct: true, Fitness: tc.gpFit}}
			parent := &search.Node{ID: 2, Parents: []int64{1}, Code: pCode, Hash: search.NormalizedHash(pCode), State: search.NodeDone,
				Result: &search.Result{Correct: true, Fitness: tc.parentFit}}
			g := search.NewGraph([]*search.Node{gp, parent})
			p, err := (&Tuner{}).Propose(context.Background(), search.Context{Parents: []*search.Node{parent}, Graph: g})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Code, tc.want) || !strings.HasPrefix(p.Notes, tc.move+":") {
				t.Fatalf("want %q, got:\n%s\n(%s)", tc.want, p.Code, p.Notes)
			}
		})
	}
}

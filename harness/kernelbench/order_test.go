package kernelbench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestExpectedCost(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		want       int
	}{
		{"plain torch", "import torch\nreturn torch.relu(x)", 0},
		{"triton", "import triton\n@triton.jit", 1},
		{"kevolve loader", "from kevolve import load_cuda", 1},
		{"load_inline", "from torch.utils.cpp_extension import load_inline", 2},
		{"torch.compile", "self.f = torch.compile(f)", 4},
		{"max-autotune wins over the rest", "load_inline(...)\ntorch.compile(f, mode=\"max-autotune\")", 8},
	} {
		if got := expectedCost(tc.code); got != tc.want {
			t.Errorf("%s: expectedCost = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The longest expected go first; equals keep their order, and a file that
// cannot be read counts as plain torch.
func TestDispatchOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, code string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pairs := []Pair{
		{CandidatePath: write("a.py", "torch.relu(x)")},
		{CandidatePath: write("b.py", "load_inline(name='b')")},
		{CandidatePath: filepath.Join(dir, "missing.py")},
		{Code: "torch.compile(f, mode='max-autotune')"},
		{CandidatePath: write("c.py", "load_inline(name='c')")},
		{CandidatePath: write("d.py", "import triton")},
	}
	if got, want := dispatchOrder(pairs, nil), []int{3, 1, 4, 5, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("dispatchOrder = %v, want %v", got, want)
	}
}

// Measured costs outrank words: a pair whose last evaluation took longest
// goes first whatever its source says, and a pair never measured ranks by
// its words at wordSeconds a weight.
func TestDispatchOrderByStoredCost(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(ref, []byte("class Model: pass"), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := func(code string) Pair { return Pair{Problem: Problem{Path: ref}, Code: code} }
	cases := []struct {
		name   string
		pairs  []Pair
		stored map[string]float64 // candidate code → build + device seconds
		want   []int
	}{{
		name:   "a slow plain-torch pair beats a quick load_inline one",
		pairs:  []Pair{pair("load_inline(a)"), pair("torch.relu(x)")},
		stored: map[string]float64{"load_inline(a)": 4, "torch.relu(x)": 60},
		want:   []int{1, 0},
	}, {
		name:   "unmeasured max-autotune (80 s by words) between measured 100 s and 30 s",
		pairs:  []Pair{pair("load_inline(b)"), pair("torch.compile(f, mode='max-autotune')"), pair("load_inline(c)")},
		stored: map[string]float64{"load_inline(b)": 30, "load_inline(c)": 100},
		want:   []int{2, 1, 0},
	}, {
		name:   "nothing stored: words alone",
		pairs:  []Pair{pair("import triton"), pair("load_inline(d)"), pair("torch.relu(x)")},
		stored: map[string]float64{},
		want:   []int{1, 0, 2},
	}, {
		name:   "equal measured costs keep their order",
		pairs:  []Pair{pair("x1"), pair("x2"), pair("x3")},
		stored: map[string]float64{"x1": 5, "x2": 9, "x3": 5},
		want:   []int{1, 0, 2},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			measured := func(_ Pair, refCode, cand string) (float64, bool) {
				if refCode != "class Model: pass" {
					t.Fatalf("reference not read: %q", refCode)
				}
				s, ok := c.stored[cand]
				return s, ok
			}
			if got := dispatchOrder(c.pairs, measured); !slices.Equal(got, c.want) {
				t.Errorf("dispatchOrder = %v, want %v", got, c.want)
			}
		})
	}
}

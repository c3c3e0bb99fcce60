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
	if got, want := dispatchOrder(pairs), []int{3, 1, 4, 5, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("dispatchOrder = %v, want %v", got, want)
	}
}

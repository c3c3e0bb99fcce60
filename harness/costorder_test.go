package harness

import (
	"context"
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
		if got := ExpectedCost(tc.code); got != tc.want {
			t.Errorf("%s: ExpectedCost = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The highest cost first; equals (unknown work among them) keep the order
// their scheduler gave them.
func TestCostliestFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost []float64
		want []int
	}{
		{"none", nil, []int{}},
		{"already in order", []float64{3, 2, 1}, []int{0, 1, 2}},
		{"reversed", []float64{1, 2, 3}, []int{2, 1, 0}},
		{"equals keep their order", []float64{0, 5, 0, 5, 0}, []int{1, 3, 0, 2, 4}},
	} {
		if got := CostliestFirst(tc.cost); !slices.Equal(got, tc.want) {
			t.Errorf("%s: CostliestFirst(%v) = %v, want %v", tc.name, tc.cost, got, tc.want)
		}
	}
}

// Without a reader the words alone rank a pair.
func TestOrderCostWithoutReader(t *testing.T) {
	if got := OrderCost(context.Background(), nil, "ref", "torch.compile(f)", "cpu"); got != 4*WordSeconds {
		t.Errorf("OrderCost = %v, want %v", got, 4*WordSeconds)
	}
	var ev *Evaluator // an evaluator never made keeps nothing
	if _, ok := ev.StoredCost(context.Background(), "ref", "cand", "cpu"); ok {
		t.Error("a nil evaluator had a stored cost")
	}
}

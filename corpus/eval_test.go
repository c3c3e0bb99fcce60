package corpus

import (
	"math"
	"testing"
)

func TestEval(t *testing.T) {
	vars := map[string]float64{"B": 4096, "D": 8192, "K": 3, "x_1": 2}
	tests := []struct {
		f    string
		want float64
	}{
		{"4*B*D", 4 * 4096 * 8192},
		{"2*B*D*4 + D*4", 2*4096*8192*4 + 8192*4},
		{"2**10", 1024},
		{"2**3**2", 512}, // right-associative, as in Python
		{"-2**2", -4},
		{"(1+2)*3", 9},
		{"10/4", 2.5},
		{"1e3 + 2.5E-1", 1000.25},
		{"1_000", 1000},
		{"min(B, D) + max(K, 1, 7)", 4096 + 7},
		{"ceil(D/3)", math.Ceil(8192.0 / 3)},
		{"floor(7/2)", 3},
		{"log2(1024) + sqrt(16)", 14},
		{"x_1 * -K", -6},
		{"B - D - K", 4096 - 8192 - 3}, // left-associative
	}
	for _, tc := range tests {
		got, err := Eval(tc.f, vars)
		if err != nil {
			t.Errorf("Eval(%q): %v", tc.f, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Eval(%q) = %g, want %g", tc.f, got, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, f := range []string{
		"", "B +", "B * (D", "Q * 2", "1 / (B - B)", "import os", "__import__('os')",
		"B; D", "pow(2, 3)", "ceil(1, 2)", "1 2", "2 ** 5000", "B.D", ")", "log2(0)", "sqrt(-1)",
	} {
		if v, err := Eval(f, map[string]float64{"B": 1, "D": 2}); err == nil {
			t.Errorf("Eval(%q) = %g, want error", f, v)
		}
	}
}

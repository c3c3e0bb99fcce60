package corpus

import (
	"math"
	"testing"
)

func TestFormulaValue(t *testing.T) {
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
		got, err := FormulaValue(tc.f, vars)
		if err != nil {
			t.Errorf("FormulaValue(%q): %v", tc.f, err)
			continue
		}
		if got != tc.want {
			t.Errorf("FormulaValue(%q) = %g, want %g", tc.f, got, tc.want)
		}
	}
}

func TestFormulaValueErrors(t *testing.T) {
	for _, f := range []string{
		"", "B +", "B * (D", "Q * 2", "1 / (B - B)", "import os", "__import__('os')",
		"B; D", "pow(2, 3)", "ceil(1, 2)", "1 2", "2 ** 5000", "B.D", ")", "log2(0)", "sqrt(-1)",
	} {
		if v, err := FormulaValue(f, map[string]float64{"B": 1, "D": 2}); err == nil {
			t.Errorf("FormulaValue(%q) = %g, want error", f, v)
		}
	}
}

// The byte formulas count the element size of each set's dtype: rmsnorm's
// small set is fp32, and `sol --ref llm/rmsnorm --shapes small` once counted
// 66,048 bytes (bf16) where 132,096 move.
func TestFormulaVarsElementSize(t *testing.T) {
	p, err := Get("llm/rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		set       string
		elem      float64
		wantBytes float64
	}{
		{"small", 4, (2*64*256 + 256) * 4},      // 132,096
		{"large", 2, (2*16384*8192 + 8192) * 2}, // bf16
	}
	for _, tc := range tests {
		vars, err := p.FormulaVars(tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if vars[ElemBytesVar] != tc.elem {
			t.Errorf("%s: elem_bytes %v, want %v", tc.set, vars[ElemBytesVar], tc.elem)
		}
		got, err := FormulaValue(p.Bytes, vars)
		if err != nil || got != tc.wantBytes {
			t.Errorf("%s: bytes %v (%v), want %v", tc.set, got, err, tc.wantBytes)
		}
		r, err := ResolveBuiltin("llm/rmsnorm", tc.set, t.TempDir())
		if err != nil || r.Bytes != tc.wantBytes {
			t.Errorf("resolve %s: bytes %v (%v), want %v", tc.set, r.Bytes, err, tc.wantBytes)
		}
	}
	if _, err := p.FormulaVars("huge"); err == nil {
		t.Error("unknown shape set accepted")
	}
	// The shape set's variables are not changed by adding elem_bytes.
	if _, ok := p.Shapes["small"][ElemBytesVar]; ok {
		t.Error("FormulaVars wrote into the problem's shapes")
	}
}

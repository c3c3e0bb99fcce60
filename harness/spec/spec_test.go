package spec

import "testing"

func TestLookupMatchesDriverNames(t *testing.T) {
	tests := []struct {
		name string
		mem  int64
		want string
	}{
		{"NVIDIA H100 80GB HBM3", 80 * gib, "h100-sxm"},
		{"NVIDIA H100 PCIe", 80 * gib, "h100-pcie"},
		{"NVIDIA H200", 141 * gb, "h200"},
		{"NVIDIA A100-SXM4-40GB", 40 * gib, "a100-40gb"},
		{"NVIDIA A100-SXM4-80GB", 80 * gib, "a100-80gb"},
		{"NVIDIA A100 80GB PCIe", 0, "a100-80gb"},
		{"NVIDIA L40S", 48 * gib, "l40s"},
		{"NVIDIA B200", 180 * gb, "b200"},
		{"AMD Instinct MI300X", 192 * gb, "mi300x"},
		{"AMD Instinct MI325X", 256 * gb, "mi325x"},
		{"AMD Instinct MI355X", 288 * gb, "mi355x"},
		{"AMD Instinct MI350X", 288 * gb, "mi350x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := Lookup(tc.name, tc.mem)
			if !ok || r.Key != tc.want {
				t.Fatalf("Lookup(%q) = %q, %v; want %q", tc.name, r.Key, ok, tc.want)
			}
		})
	}
	if _, ok := Lookup("NVIDIA GeForce GT 710", 0); ok {
		t.Fatal("an unknown card matched a row")
	}
}

// Every row must carry every figure the SOL analysis divides by, and a source.
func TestRowsComplete(t *testing.T) {
	required := map[string]bool{"h100-sxm": true, "h100-pcie": true, "h200": true, "a100-40gb": true, "a100-80gb": true,
		"l40s": true, "b200": true, "mi300x": true, "mi325x": true, "mi355x": true, "mi350x": true}
	for _, r := range All() {
		delete(required, r.Key)
		if r.Units <= 0 || r.MemBandwidth <= 0 || r.L2Bytes <= 0 || r.SharedPerUnit <= 0 || r.MemBytes <= 0 || r.Source == "" {
			t.Errorf("%s: incomplete row %+v", r.Key, r)
		}
		for _, d := range []string{FP64, FP32, BF16, FP16} {
			if r.PeakFLOPS[d] <= 0 {
				t.Errorf("%s: no %s peak", r.Key, d)
			}
		}
		// Tensor-core bf16 is always well above plain fp32 on these parts.
		if r.PeakFLOPS[BF16] < 2*r.PeakFLOPS[FP32] {
			t.Errorf("%s: bf16 peak %.3g not above 2x fp32 %.3g: a typo?", r.Key, r.PeakFLOPS[BF16], r.PeakFLOPS[FP32])
		}
	}
	for k := range required {
		t.Errorf("missing row %s", k)
	}
}

func TestAliasesAndDtypes(t *testing.T) {
	r, ok := Get("H100")
	if !ok || r.Key != "h100-sxm" {
		t.Fatalf("Get(H100) = %v %v", r.Key, ok)
	}
	for in, want := range map[string]string{"torch.bfloat16": BF16, "half": FP16, "float8_e4m3fn": FP8, "float32": FP32} {
		if got := NormalizeDtype(in); got != want {
			t.Errorf("NormalizeDtype(%q) = %q, want %q", in, got, want)
		}
	}
	if p, ok := r.Peak("bfloat16"); !ok || p < 900e12 {
		t.Errorf("h100 bf16 peak = %v", p)
	}
}

package profile

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The speed-of-light check's "own work" (DRAM bytes, CUDA-core FLOPs) read
// from a recorded H100 profile (testdata/ncu, --set full): the copy kernel
// read 268.45 MB and wrote 251.27 MB; its only FP instructions are half
// FMAs, 1.450423 per elapsed cycle over 372768.42 cycles, two FLOPs each.
func TestNCUOwnWork(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "ncu", "coalesced_raw.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := ParseNCURaw(f)
	if err != nil || len(ks) == 0 {
		t.Fatalf("parse: %v (%d kernels)", err, len(ks))
	}
	k := ks[0]
	if k.DRAMBytes == nil || math.Abs(*k.DRAMBytes-(268.448768e6+251.26784e6)) > 1e3 {
		t.Fatalf("dram bytes %v", k.DRAMBytes)
	}
	want := 2 * 1.450423 * 372768.424242
	if k.FLOPs == nil || math.Abs(*k.FLOPs-want) > 1 {
		t.Fatalf("flops %v, want %.0f", k.FLOPs, want)
	}
}

// Options.Metrics narrows the collection to the named metrics.
func TestNCUArgsMetrics(t *testing.T) {
	full := ncuArgs("r", 5, nil, "py", []string{"d.py"})
	narrow := ncuArgs("r", 5, OwnWorkMetrics, "py", []string{"d.py"})
	has := func(a []string, s string) bool {
		for _, x := range a {
			if x == s {
				return true
			}
		}
		return false
	}
	if !has(full, "full") || has(full, "--metrics") || !has(narrow, "--metrics") || has(narrow, "--set") {
		t.Fatalf("full %q narrow %q", full, narrow)
	}
	if narrow[len(narrow)-1] != "d.py" || narrow[len(narrow)-2] != "py" {
		t.Fatalf("the profiled command must end the arguments: %q", narrow)
	}
}

// Counts ncu scales with a prefix read in base units.
func TestUnitScaleCounts(t *testing.T) {
	for unit, want := range map[string]float64{"cycle": 1, "Kcycle": 1e3, "Mcycle": 1e6, "Gcycle": 1e9, "Minst": 1e6, "Mbyte": 1e6, "byte": 1} {
		if got := unitScale(unit); got != want {
			t.Errorf("unitScale(%q) = %g, want %g", unit, got, want)
		}
	}
}

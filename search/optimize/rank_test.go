package optimize

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
)

// TestRank: regions rank by the model's saving at their speed of light
// (share x (1 - 1/headroom)), not by share alone; nodes outside regions
// rank by share with a note; Amdahl's bound sits beside each.
func TestRank(t *testing.T) {
	p := &extract.Profile{
		Regions: []extract.Region{
			// 40% of the time, already near its SOL: little to save.
			{Sig: "linear", Where: "fc", TimeUs: 400, Share: 0.4, FLOPs: 2e9 * 380e-6, Bytes: 1, Dtype: "float32"},
			// 20% of the time, 10x off its SOL: more to save.
			{Sig: "rmsnorm", Where: "norm", TimeUs: 200, Share: 0.2, Bytes: 1e9 * 20e-6, Dtype: "float32"},
		},
		Nodes: []extract.Node{{Name: "add", Target: "add", TimeUs: 50, Share: 0.05}},
	}
	c := &sol.Ceilings{PeakFLOPS: map[string]float64{"fp32": 2e9}, MemBandwidth: 1e9}
	ops := Rank(p, c)
	// linear saves 0.4 x (1 - 380/400) = 0.02: less than the 5% add.
	if ops[0].Sig != "rmsnorm" || ops[1].Where != "add" || ops[2].Sig != "linear" {
		t.Fatalf("order: %s, %s, %s", ops[0].Name, ops[1].Name, ops[2].Name)
	}
	for _, c := range []struct {
		got, want float64
	}{
		{ops[0].Headroom, 10}, {ops[0].Saving, 0.2 * 0.9}, {ops[0].Amdahl, 1 / 0.8},
		{ops[2].Headroom, 400.0 / 380}, {ops[1].Saving, 0.05},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	// Without ceilings, the saving is the share.
	if ops := Rank(p, nil); ops[0].Sig != "linear" || ops[0].Saving != 0.4 {
		t.Errorf("no ceilings: %+v", ops[0])
	}
}

func TestPredicted(t *testing.T) {
	for _, c := range []struct {
		shares, speedups []float64
		want             float64
	}{
		{nil, nil, 1},
		{[]float64{0.5}, []float64{2}, 1 / 0.75},
		{[]float64{0.2, 0.3}, []float64{2, 3}, 1 / (1 - 0.1 - 0.2)},
		{[]float64{0.5}, []float64{0.5}, 1 / 1.5}, // a slower kernel predicts a slowdown
	} {
		if got := Predicted(c.shares, c.speedups); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Predicted(%v, %v) = %v, want %v", c.shares, c.speedups, got, c.want)
		}
	}
}

// TestSpread: the spread of a speedup is the medians' standard error, not
// one iteration's spread; without raw timings, twice the cv.
func TestSpread(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"candidate": map[string]any{"cv": 0.4, "iters": 100}, "ref_eager": map[string]any{"cv": 0.3, "iters": 25}})
	got := Spread(&search.Result{CV: 0.4, Raw: raw})
	want := 2 * math.Hypot(1.2533*0.4/10, 1.2533*0.3/5)
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("spread %v, want %v", got, want)
	}
	if got := Spread(&search.Result{CV: 0.1}); got != 0.2 {
		t.Errorf("no raw timings: %v, want 0.2", got)
	}
}

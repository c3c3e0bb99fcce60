package tools

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// On a fresh database sol_analysis bounds a problem on this CPU with no
// shell step: the first calls calibrate it, once however many arrive
// together, and the one that calibrated says so and how long it took.
func TestSolAnalysisCalibratesOnFirstUse(t *testing.T) {
	py := toolchaintest.Python(t)
	db, err := store.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cal := sol.NewFirstUse(db, py)
	// No GPU in the report, so the CPU is what is bounded on any host.
	prov := func(ctx context.Context, key string) (sol.Ceilings, error) {
		return cal.Ceilings(ctx, device.Report{}, key)
	}
	c := toolstest.Connect(t, solServer(t, prov))
	args := map[string]any{"reference": "llm/softmax", "shapes": "small"}

	const n = 3
	reps := make([]sol.Report, n)
	var wg sync.WaitGroup
	for i := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", args), &reps[i])
		}()
	}
	wg.Wait()
	calibrated := 0
	for i, r := range reps {
		if r.TSolS <= 0 || r.CeilingSource != "measured" || r.MemBandwidth <= 0 {
			t.Errorf("call %d: no bound from measured ceilings: %+v", i, r.Result)
		}
		if r.Calibration == nil {
			continue
		}
		calibrated++
		if r.Calibration.DurationS <= 0 || r.Calibration.Metrics[sol.MetricMemBandwidth] <= 0 || !hasNote(r.Notes, "calibrated first, in") {
			t.Errorf("call %d calibrated but does not say how: %+v notes %v", i, r.Calibration, r.Notes)
		}
		t.Logf("first-use calibration: %.1f s, %v", r.Calibration.DurationS, r.Calibration.Metrics)
	}
	if calibrated != 1 {
		t.Fatalf("%d of %d concurrent first calls calibrated, want exactly 1", calibrated, n)
	}
	var later sol.Report
	toolstest.Decode(t, toolstest.Call(t, c, "sol_analysis", args), &later)
	if later.Calibration != nil || hasNote(later.Notes, "calibrated first") {
		t.Errorf("a later call calibrated again: %+v", later.Calibration)
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

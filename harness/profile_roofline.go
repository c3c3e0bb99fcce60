package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// cpuRoofline is the problem's speed of light on this CPU, for the CPU
// profile's diagnosis to weigh the call's time against: the work declared
// for the shape set (else traced from the reference) under the CPU's
// measured ceilings, which are calibrated first on a fresh database. It
// runs before the profile holds the CPU (the calibration holds it too).
// Without it the diagnosis rests on timings alone; notes say why.
func (e *Evaluator) cpuRoofline(ctx context.Context, p Problem, refPath string) (*profile.Roofline, []string) {
	cal := e.Calibrator()
	if cal == nil {
		return nil, []string{"no speed-of-light figures: no database for this CPU's measured ceilings"}
	}
	ceil, err := cal.CPUCeilings(ctx)
	if err != nil {
		return nil, []string{"no speed-of-light figures: " + err.Error()}
	}
	var notes []string
	if ceil.Calibrated != nil {
		notes = append(notes, sol.FirstUseNote(ceil.Calibrated))
	}
	if ceil.Provisional {
		notes = append(notes, sol.ProvisionalNote)
	}
	w, err := e.workFor(ctx, p.Shapes, "", p.Work, func(ctx context.Context) (sol.Work, error) {
		return sol.Trace(ctx, refPath, sol.TraceOptions{Python: e.cfg.Python, Shapes: p.Shapes, Timeout: 120 * time.Second})
	})
	if err != nil {
		return nil, append(notes, "no speed-of-light figures: the work could not be counted: "+err.Error())
	}
	a := sol.Analyze(w, ceil, 0, 0, true)
	if a.TSolS <= 0 {
		return nil, append(notes, append([]string{"no speed-of-light figures: t_sol is 0"}, a.Notes...)...)
	}
	return &profile.Roofline{Bound: a.Bound, TSolUs: a.TSolS * 1e6, TMemoryUs: a.TMemoryS * 1e6, TComputeUs: a.TComputeS * 1e6,
		FLOPs: w.FLOPs, Bytes: w.Bytes, MemBandwidth: a.MemBandwidth, PeakFLOPS: a.PeakFLOPS,
		Source: fmt.Sprintf("%s work, %s ceilings of this CPU", w.Source, ceil.Source)}, notes
}

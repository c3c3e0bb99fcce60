package harness

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// Speed of light on every timed evaluation: the problem's work (declared,
// else traced from the reference), bounded under the ceilings of the
// device the evaluation ran on (measured on its UUID where calibrated,
// else its datasheet row).
//
// The faster_than_sol check must never fire on an honest kernel, so it
// does not use the reported bound but a more generous one, each term
// loosened by a counting error an honest kernel could exploit:
//   - ceilings: the larger of measured and datasheet figures (a read-only
//     kernel beats the copy benchmark that measured bandwidth: on the H100
//     3.0 TB/s measured against 3.35 on the datasheet);
//   - dtype: fp32 work against the TF32 peak and bf16/fp16 against the
//     larger of the two (Triton's tl.dot takes fp32 inputs as TF32 by
//     default);
//   - bytes: less the last-level cache (L2, plus the Infinity Cache on AMD,
//     a generous 256 MiB on a CPU): outputs written into cache need not
//     reach memory before the timer stops, even after the harness's flush;
//   - traced FLOPs count elementwise ops at a stated per-op cost, which
//     fused fast-math code can undercut: half of them count.
//
// Then a candidate is flagged only when more than FasterThanSOLMargin
// below that bound: the spread of a steady timing (CV of a few percent;
// ncu and our events agree within 2% at 44 µs) is well inside it.
const FasterThanSOLMargin = 0.10

// KernelBenchSpeedupWarning is the speedup over eager above which a result
// without a SOL bound is flagged for a human look (KernelBench uses 10x).
const KernelBenchSpeedupWarning = 10.0

// declaredFor reports whether declared work counts the shape set that runs.
func declaredFor(w problem.Work, shapes string) bool {
	return w.Declared() && (w.Shapes == "" || w.Shapes == shapes)
}

// workFor is a problem's work: declared where both counts are, else traced,
// with declared figures kept over traced ones.
func (e *Evaluator) workFor(ctx context.Context, shapes, dtype string, declared problem.Work, trace func(context.Context) (sol.Work, error)) (sol.Work, error) {
	if declared.Shapes != "" && declared.Shapes != shapes {
		// Declared for another shape set than the one that ran.
		declared, dtype = problem.Work{}, ""
	} else if dtype == "" {
		dtype = declared.Dtype
	}
	if declared.Declared() {
		w := sol.Work{FLOPs: declared.FLOPs, Bytes: declared.Bytes, Dtype: spec.NormalizeDtype(dtype), Source: "declared"}
		if w.Dtype == "" {
			w.Dtype = spec.FP32
		}
		return w, nil
	}
	w, err := trace(ctx)
	if err != nil {
		return sol.Work{}, err
	}
	if declared.FLOPs > 0 {
		w.FLOPs, w.Source = declared.FLOPs, "declared+traced"
	}
	if declared.Bytes > 0 {
		w.Bytes, w.Source = declared.Bytes, "declared+traced"
	}
	if dtype != "" {
		w.Dtype = spec.NormalizeDtype(dtype)
	}
	return w, nil
}

// ceilingsFor resolves the ceilings of a leased device and its spec row
// (nil on the CPU).
func (e *Evaluator) ceilingsFor(ctx context.Context, t target.Name, d lease.Device) (sol.Ceilings, *spec.Row, error) {
	if t == target.CPU {
		if e.cfg.DB == nil {
			return sol.Ceilings{}, nil, errors.New("no database for this CPU's measured ceilings (the CPU has no datasheet row)")
		}
		uuid, ok, err := sol.CPUCalibrationUUID(ctx, e.cfg.DB)
		if err != nil {
			return sol.Ceilings{}, nil, err
		}
		if !ok {
			return sol.Ceilings{}, nil, errors.New("this CPU was never calibrated: call sol_analysis once (it calibrates on first use) or run `kevolve-mcp calibrate --db FILE` with the server's database (seconds on a CPU)")
		}
		c, err := sol.CeilingsFor(ctx, e.cfg.DB, uuid, "", "")
		return c, nil, err
	}
	var row *spec.Row
	if r, ok := spec.Get(d.SpecKey); ok {
		row = &r
	} else if r, ok := spec.Lookup(d.Name, 0); ok {
		row = &r
	}
	key := ""
	if row != nil {
		key = row.Key
	}
	c, err := sol.CeilingsFor(ctx, e.cfg.DB, d.UUID, d.Name, key)
	return c, row, err
}

// cacheBytes is the last-level cache an output may hide in (see above).
func cacheBytes(t target.Name, row *spec.Row) float64 {
	switch {
	case t == target.CPU:
		return 256 << 20
	case row == nil:
		return 128 << 20
	case row.Vendor == "amd":
		return float64(row.L2Bytes) + 256<<20
	}
	return float64(row.L2Bytes)
}

// cacheWriteSpeedup is how much faster than the memory's peak bandwidth
// outputs that fit in the caches are taken to be written: generous (an
// H100's L2 writes about 3x its HBM; a CPU's caches a few times DRAM), so
// an honest kernel is never under the floor.
const cacheWriteSpeedup = 20.0

// outputFloor is the least time writing the outputs takes (0 when the
// judge measured none): what does not fit in the caches at the memory's
// peak bandwidth, the rest cacheWriteSpeedup times faster. The output
// size is the judge's, from its own reference.
func outputFloor(res *EvalResult, t target.Name, c sol.Ceilings, row *spec.Row) float64 {
	bw := memBandwidth(c, row)
	if res.Judge == nil || res.Judge.OutputBytes <= 0 || bw <= 0 {
		return 0
	}
	b := res.Judge.OutputBytes
	inCache := math.Min(b, cacheBytes(t, row))
	return (b-inCache)/bw + inCache/(cacheWriteSpeedup*bw)
}

// writesFasterThanLight fails a passing result whose candidate median is
// under the time writing its outputs takes (outputFloor): no algorithm,
// however clever, writes its outputs faster, so there is no shortcut to
// note, only a time that was not the kernel's.
func writesFasterThanLight(res *EvalResult, t target.Name, c sol.Ceilings, row *spec.Row) bool {
	floor := outputFloor(res, t, c, row)
	med := res.Candidate.MedianS
	if res.Verdict != VerdictPass || med >= (1-FasterThanSOLMargin)*floor {
		return false
	}
	res.Verdict, res.Stage, res.Correct = VerdictIntegrityViolation, "integrity", false
	res.Checks = append(res.Checks, Check{Name: "faster_than_sol", Passed: false, Detail: fmt.Sprintf(
		"faster than physically possible: median %s is below the %s that writing its %.4g B of outputs alone takes at the device's peak bandwidth (%.4g B/s; %.0fx that for what fits in its caches): the time was not the kernel's",
		Seconds(med), Seconds(floor), res.Judge.OutputBytes, memBandwidth(c, row), cacheWriteSpeedup)})
	return true
}

// memBandwidth is the most generous memory bandwidth known for the device.
func memBandwidth(c sol.Ceilings, row *spec.Row) float64 {
	if row != nil {
		return math.Max(c.MemBandwidth, row.MemBandwidth)
	}
	return c.MemBandwidth
}

// checkBound is the generous bound the faster_than_sol check uses.
func checkBound(t target.Name, w sol.Work, c sol.Ceilings, row *spec.Row) float64 {
	peaks := map[string]float64{}
	for k, v := range c.PeakFLOPS {
		peaks[k] = v
	}
	bw := memBandwidth(c, row)
	if row != nil {
		for k, v := range row.PeakFLOPS {
			peaks[k] = math.Max(peaks[k], v)
		}
	}
	dt := spec.NormalizeDtype(w.Dtype)
	peak := peaks[dt]
	switch dt {
	case spec.FP32:
		peak = math.Max(peak, peaks[spec.TF32])
	case spec.BF16, spec.FP16:
		peak = math.Max(peaks[spec.BF16], peaks[spec.FP16])
	}
	var tc, tm float64
	if peak > 0 {
		flops := w.FLOPs
		if w.Source != "declared" {
			flops /= 2
		}
		tc = flops / peak
	}
	if bw > 0 {
		tm = math.Max(0, w.Bytes-cacheBytes(t, row)) / bw
	}
	return math.Max(tc, tm)
}

// applySOL bounds a timed result and flags a candidate faster than light
// (one faster than the traced bound is judged by its own measured work
// where own can measure it: sol_shortcut.go). work and workErr are the
// counting's outcome.
func (e *Evaluator) applySOL(ctx context.Context, t target.Name, d lease.Device, res *EvalResult, w sol.Work, workErr error, own ownWorkFunc) {
	if res.Candidate == nil || res.Candidate.MedianS <= 0 {
		return
	}
	noSOL := func(why string) {
		res.SOL = &SOL{Notes: []string{why}}
		if res.SpeedupVsEager != nil && *res.SpeedupVsEager > KernelBenchSpeedupWarning {
			res.Warnings = append(res.Warnings, fmt.Sprintf("speedup over eager %.1fx is above %gx and no speed-of-light bound could be computed (%s): check by hand that the candidate does the work", *res.SpeedupVsEager, KernelBenchSpeedupWarning, why))
		}
	}
	ceil, row, err := e.ceilingsFor(ctx, t, d)
	if err == nil && writesFasterThanLight(res, t, ceil, row) {
		return
	}
	if workErr != nil {
		noSOL("work could not be counted: " + workErr.Error())
		return
	}
	if err != nil {
		noSOL("no ceilings: " + err.Error())
		return
	}
	refS := 0.0
	if res.RefEager != nil {
		refS = res.RefEager.MedianS
	}
	a := sol.Analyze(w, ceil, res.Candidate.MedianS, refS, res.Correct)
	s := &SOL{TSolS: a.TSolS, TComputeS: a.TComputeS, TMemoryS: a.TMemoryS, Bound: a.Bound, FLOPs: w.FLOPs, Bytes: w.Bytes,
		Dtype: w.Dtype, WorkSource: w.Source, Ceilings: ceil.Source, PeakFLOPS: a.PeakFLOPS, MemBandwidth: ceil.MemBandwidth,
		DeviceUUID: d.UUID, Notes: a.Notes}
	if a.TSolS <= 0 {
		noSOL("t_sol is 0 (no work counted or no ceilings for dtype " + w.Dtype + ")")
		res.SOL.Notes = append(res.SOL.Notes, a.Notes...)
		return
	}
	s.PctOfSol, s.SolScore = a.PctOfSol, a.SolScore
	s.CheckTSolS = checkBound(t, w, ceil, row)
	res.SOL = s
	res.TSolS, res.PctOfSol, res.SolScore = &s.TSolS, s.PctOfSol, s.SolScore
	aboveBoundNote(res, s)
	med := res.Candidate.MedianS
	if s.CheckTSolS > 0 {
		fast := med < (1-FasterThanSOLMargin)*s.CheckTSolS
		detail := fmt.Sprintf("median %s vs speed of light %s (%s-bound: %.4g FLOP, %.4g B, %s, %s ceilings); the check's bound, with every ceiling and count loosened for honest kernels, is %s and a candidate must stay above %.0f%% of it",
			Seconds(med), Seconds(s.TSolS), s.Bound, w.FLOPs, w.Bytes, w.Source, ceil.Source, Seconds(s.CheckTSolS), (1-FasterThanSOLMargin)*100)
		if fast && res.Verdict == VerdictPass {
			var more string
			fast, more = judgeShortcut(ctx, own, t, med, ceil, row, res)
			detail += more
		}

		if fast {
			detail = fmt.Sprintf("faster than physically possible: %s; the result skips, hides or replays work (or the problem's declared counts are wrong)", detail)
			if res.Verdict == VerdictPass {
				res.Verdict, res.Stage = VerdictIntegrityViolation, "integrity"
				res.Correct = false
			}
			zero := 0.0
			s.SolScore, res.SolScore = &zero, &zero
		}
		res.Checks = append(res.Checks, Check{Name: "faster_than_sol", Passed: !fast, Detail: detail})
	}
}

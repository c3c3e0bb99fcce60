package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// The traced speed-of-light bound is the reference algorithm's: diag(A) @ B
// counted as a matmul is O(N²M) work, while a row scaling does O(NM). A
// candidate faster than that bound has either found a cheaper algorithm or
// skipped, hidden or replayed work. On NVIDIA the two are told apart by
// the candidate's own work, measured for one call by Nsight Compute (DRAM
// bytes, CUDA-core FLOPs): a time consistent with that work at the
// device's most generous ceilings passes with an algorithmic_shortcut
// note; a time below it is an integrity violation. Elsewhere (the CPU,
// AMD until rocprof's counters are read) the loosened traced bound decides.
//
// The measured work errs low, never high (tensor-core FLOPs are not
// counted; writes that can stay in L2 are subtracted), so an honest kernel
// is never flagged by it; what it catches are times no kernel doing the
// measured traffic could reach.

// OwnWork is the candidate's own work for one call, as the device's
// profiler measured it, and the time it needs at the ceilings.
type OwnWork struct {
	FLOPs     float64 `json:"flops"`
	DRAMBytes float64 `json:"dram_bytes"`
	Kernels   int     `json:"kernels"`
	Profiler  string  `json:"profiler"`
	// WallS is the profile's whole run, HeldS the part of it that held
	// the device (its set-up and builds run beside other evaluations).
	WallS float64 `json:"wall_s"`
	HeldS float64 `json:"held_s"`
	// BoundS is that work under the same generous ceilings the
	// faster_than_sol check uses (checkBound): the least time it can take.
	BoundS float64 `json:"bound_s"`
}

// ownWorkFunc measures a candidate's own work (nil where no profiler can).
type ownWorkFunc func(ctx context.Context) (OwnWork, error)

// ownWorkTimeout bounds the profile: ncu replays each kernel once per
// metric pass (a few seconds a kernel with OwnWorkMetrics).
const ownWorkTimeout = 5 * time.Minute

// ownWorkFor returns the measurement for an evaluation on t, or nil. The
// profiled kernels run in a device phase (exclusive: the device's gate),
// as the timed calls do: the DRAM counters are the device's, so another
// evaluation's kernels beside the replays would count as the candidate's
// work (raising its bound, which must only err low), and the replays
// would run beside that evaluation's timed calls. The profiled process's
// start, imports and builds run outside it (profile.Options.Hold).
func (e *Evaluator) ownWorkFor(t target.Name, ref, cand Source, shapes string, env map[string]string, exclusive profile.HoldFunc) ownWorkFunc {
	if t != target.NVIDIA {
		return nil
	}
	return func(ctx context.Context) (OwnWork, error) {
		refPath, cleanRef, err := profile.ReferenceFile(ref)
		if err != nil {
			return OwnWork{}, err
		}
		defer cleanRef()
		candPath, cleanCand, err := profile.ReferenceFile(cand)
		if err != nil {
			return OwnWork{}, err
		}
		defer cleanCand()
		rep, err := profile.Profile(ctx, refPath, candPath, profile.Options{Python: e.cfg.Python, PyDir: e.PyDir(), CacheDir: kernelCache(e.cfg.CacheDir), Backend: "ncu",
			Shapes: shapes, Env: env, Metrics: profile.OwnWorkMetrics, LaunchCount: 200, Timeout: ownWorkTimeout, Hold: exclusive})
		if err != nil {
			return OwnWork{}, err
		}
		return ownWorkOf(rep)
	}
}

// ownWorkOf sums a profile's kernels.
func ownWorkOf(rep profile.Report) (OwnWork, error) {
	if !rep.Available {
		return OwnWork{}, errors.New(rep.Missing)
	}
	w := OwnWork{Kernels: len(rep.Kernels), Profiler: rep.Profiler, WallS: rep.WallS, HeldS: rep.HeldS}
	for _, k := range rep.Kernels {
		if k.DRAMBytes == nil {
			return OwnWork{}, fmt.Errorf("the profile of kernel %q has no DRAM bytes", k.Name)
		}
		w.DRAMBytes += *k.DRAMBytes
		if k.FLOPs != nil {
			w.FLOPs += *k.FLOPs
		}
	}
	if w.Kernels == 0 {
		return OwnWork{}, errors.New("the profile saw no kernel of the candidate's")
	}
	return w, nil
}

// ownBound is the least time a candidate's own measured work takes: its
// FLOPs at the largest peak of any dtype, its DRAM bytes less the
// last-level cache at the larger of measured and datasheet bandwidth.
func ownBound(t target.Name, w OwnWork, c sol.Ceilings, row *spec.Row) float64 {
	peak, bw := 0.0, c.MemBandwidth
	for _, v := range c.PeakFLOPS {
		peak = math.Max(peak, v)
	}
	if row != nil {
		for _, v := range row.PeakFLOPS {
			peak = math.Max(peak, v)
		}
		bw = math.Max(bw, row.MemBandwidth)
	}
	var tc, tm float64
	if peak > 0 {
		tc = w.FLOPs / peak
	}
	if bw > 0 {
		tm = math.Max(0, w.DRAMBytes-cacheBytes(t, row)) / bw
	}
	return math.Max(tc, tm)
}

// judgeShortcut decides a candidate that beat the traced bound by its own
// measured work. It returns whether the time is still impossible and what
// to add to the check's detail; a consistent time adds the
// algorithmic_shortcut note to res.
func judgeShortcut(ctx context.Context, own ownWorkFunc, t target.Name, med float64, c sol.Ceilings, row *spec.Row, res *EvalResult) (bool, string) {
	if own == nil {
		return true, ""
	}
	w, err := own(ctx)
	if err != nil {
		return true, "; the candidate's own work could not be measured (" + err.Error() + "), so the traced bound decides"
	}
	w.BoundS = ownBound(t, w, c, row)
	if res.SOL != nil {
		res.SOL.OwnWork = &w
	}
	what := fmt.Sprintf("its own work, measured by %s for one call: %.4g B of DRAM traffic, %.4g FLOP on the CUDA cores, %d kernel(s), which need at least %s at the device's ceilings",
		w.Profiler, w.DRAMBytes, w.FLOPs, w.Kernels, Seconds(w.BoundS))
	if med < (1-FasterThanSOLMargin)*w.BoundS {
		return true, "; " + what + ": the median is below that too"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("algorithmic_shortcut: median %s beats the reference algorithm's speed of light, consistent with %s: a cheaper algorithm, not a skipped result",
		Seconds(med), what))
	return false, "; consistent with " + what + " (algorithmic_shortcut)"
}

// aboveBoundNote says a result ran above 100% of the traced bound.
func aboveBoundNote(res *EvalResult, s *SOL) {
	if s.PctOfSol == nil || *s.PctOfSol <= 100 {
		return
	}
	res.Notes = append(res.Notes, fmt.Sprintf("above the traced speed of light: %.0f%% of the bound counted from the reference's algorithm (%s-bound, %s work): the candidate does less work than that algorithm, or the counts are off",
		*s.PctOfSol, s.Bound, s.WorkSource))
}

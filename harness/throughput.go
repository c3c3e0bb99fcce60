package harness

import (
	"fmt"
	"sort"
	"time"
)

// PhaseMedians reads a run's results' stage_s (issue 34): the median
// seconds an evaluation held its device against the median of the timed
// work that decides its verdict and speedup (correctness + timing). Their
// ratio is the device phase's overhead: contexts, warm-ups, re-checks.
// n counts the results that held a device; 0 leaves both medians 0.
func PhaseMedians(stageS []map[string]float64) (deviceS, timedS float64, n int) {
	var held, timed []float64
	for _, s := range stageS {
		if s[StageDeviceHeld] <= 0 {
			continue
		}
		held = append(held, s[StageDeviceHeld])
		timed = append(timed, s["correctness"]+s["timing"])
	}
	return median(held), median(timed), len(held)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = append([]float64(nil), xs...)
	sort.Float64s(xs)
	if m := len(xs) / 2; len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[len(xs)/2]
}

// ThroughputMark is where a run's count starts: the evaluations this
// evaluator had finished, the devices' busy time and the clock.
type ThroughputMark struct {
	n    int
	busy map[string]time.Duration
	t0   time.Time
}

// Throughput is what a run (an evolve, a sweep) got from the evaluator
// since its mark: evaluations a minute, the devices' busy share and the
// device phase's median against the timed work's.
type Throughput struct {
	Evaluations        int     `json:"evaluations"`
	WallS              float64 `json:"wall_s"`
	PerMinute          float64 `json:"per_minute"`
	DeviceBusyShare    float64 `json:"device_busy_share"`
	DeviceHeldS        float64 `json:"device_held_s"`
	DevicePhaseMedianS float64 `json:"device_phase_median_s"`
	TimedMedianS       float64 `json:"timed_median_s"`
}

// notePhase keeps a fresh evaluation's stage seconds for Throughput.
func (e *Evaluator) notePhase(res *EvalResult) {
	s := map[string]float64{StageDeviceHeld: res.StageS[StageDeviceHeld], "correctness": res.StageS["correctness"], "timing": res.StageS["timing"]}
	e.phaseMu.Lock()
	e.phases = append(e.phases, s)
	e.phaseMu.Unlock()
}

// Mark starts a run's throughput count.
func (e *Evaluator) Mark() ThroughputMark {
	e.phaseMu.Lock()
	n := len(e.phases)
	e.phaseMu.Unlock()
	return ThroughputMark{n: n, busy: e.DeviceBusy(), t0: time.Now()}
}

// Throughput is the run's since m.
func (e *Evaluator) Throughput(m ThroughputMark) Throughput {
	e.phaseMu.Lock()
	phases := append([]map[string]float64(nil), e.phases[m.n:]...)
	e.phaseMu.Unlock()
	wall := time.Since(m.t0)
	t := Throughput{Evaluations: len(phases), WallS: wall.Seconds()}
	if wall > 0 {
		t.PerMinute = float64(len(phases)) / wall.Minutes()
	}
	share, held := DeviceShare(m.busy, e.DeviceBusy(), wall)
	t.DeviceBusyShare, t.DeviceHeldS = share, held.Seconds()
	t.DevicePhaseMedianS, t.TimedMedianS, _ = PhaseMedians(phases)
	return t
}

// String is the line a run prints at its end.
func (t Throughput) String() string {
	s := fmt.Sprintf("throughput: %d evaluations in %.1f s, %.1f a minute; device busy %.0f%% (held %.1f s)",
		t.Evaluations, t.WallS, t.PerMinute, 100*t.DeviceBusyShare, t.DeviceHeldS)
	if t.DevicePhaseMedianS > 0 {
		s += fmt.Sprintf("; device phase median %.2f s against %.3f s of correctness and timing", t.DevicePhaseMedianS, t.TimedMedianS)
		if t.TimedMedianS > 0 {
			s += fmt.Sprintf(" (%.0fx)", t.DevicePhaseMedianS/t.TimedMedianS)
		}
	}
	return s
}

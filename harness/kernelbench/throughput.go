package kernelbench

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness"
)

// throughput fills the summary's rate and device-phase medians from the
// pairs evaluated now (a resumed pair's seconds are an earlier sweep's).
func (s *Summary) throughput(recs []Record) {
	var stages []map[string]float64
	for _, r := range recs {
		if !r.Resumed && r.Result != nil {
			stages = append(stages, r.Result.StageS)
		}
	}
	if s.WallS > 0 {
		s.EvalsPerMinute = float64(s.Evaluated) / (s.WallS / 60)
	}
	s.DevicePhaseMedianS, s.TimedMedianS, _ = harness.PhaseMedians(stages)
}

// overhead says how many times the timed work the device phase took.
func overhead(deviceS, timedS float64) string {
	if timedS <= 0 {
		return "no timed work"
	}
	return fmt.Sprintf("%.0fx", deviceS/timedS)
}

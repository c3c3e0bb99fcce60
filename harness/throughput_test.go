package harness

import (
	"strings"
	"testing"
)

func TestPhaseMedians(t *testing.T) {
	cases := []struct {
		name          string
		stageS        []map[string]float64
		device, timed float64
		n             int
	}{
		{"none", nil, 0, 0, 0},
		{"never held a device (cached, compile error)", []map[string]float64{{"load_candidate": 3}}, 0, 0, 0},
		{"odd count", []map[string]float64{
			{"device_held": 7.3, "correctness": 0.1, "timing": 0.15},
			{"device_held": 1, "correctness": 0.05, "timing": 0.05},
			{"device_held": 9, "correctness": 0.2, "timing": 0.2},
			{"load_candidate": 30},
		}, 7.3, 0.25, 3},
		{"even count: the mean of the middle two", []map[string]float64{
			{"device_held": 2, "timing": 0.1}, {"device_held": 4, "timing": 0.3},
		}, 3, 0.2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, tm, n := PhaseMedians(c.stageS)
			if n != c.n || !near(d, c.device) || !near(tm, c.timed) {
				t.Fatalf("PhaseMedians = %v, %v, %d; want %v, %v, %d", d, tm, n, c.device, c.timed, c.n)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A run's throughput counts the evaluations since its mark, a cached
// answer not among them, with the device phase read from their stage_s.
func TestThroughputSinceMark(t *testing.T) {
	ev := reuseEvaluator(t)
	evalNormalize(t, ev, candNormalize, false) // before the mark
	m := ev.Mark()
	res := evalNormalize(t, ev, candNormalize+"\n# timed\n", true)
	tp := ev.Throughput(m)
	t.Log(tp)
	if tp.Evaluations != 1 || tp.PerMinute <= 0 || tp.DevicePhaseMedianS != res.StageS[StageDeviceHeld] ||
		tp.TimedMedianS != res.StageS["correctness"]+res.StageS["timing"] || tp.TimedMedianS <= 0 {
		t.Fatalf("throughput %+v from stage_s %v", tp, res.StageS)
	}
	if s := tp.String(); !strings.Contains(s, "1 evaluations") || !strings.Contains(s, "a minute") {
		t.Fatalf("line %q", s)
	}
}

package harness

import (
	"math"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The device phase of an evaluation as the Go side saw it (worker.Outcome:
// DeviceHeld, Stages), added to its stage_s beside the child's own seconds:
// how long the evaluation held its device, and which stages ran while it
// did. A stage of the child's whose time shows up under StageHeldPrefix
// held every other evaluation of its device waiting; on a host with
// several GPUs those are the seconds to look at first when the GPUs do not
// scale (TestGPUFleetThroughput prints them).
const (
	// StageDeviceHeld is the seconds the evaluation held its device.
	StageDeviceHeld = "device_held"
	// StageHeldPrefix + a progress stage is the seconds of that stage
	// spent holding the device ("held:wait_device" is the grant's way to
	// the child: Go to the worker parent's loop to the child's pipe).
	StageHeldPrefix = "held:"
)

// addDevicePhase puts an outcome's device phase into the result's stage_s.
// Nothing where the job never held the device.
func addDevicePhase(res *EvalResult, out *worker.Outcome) {
	if out == nil || out.DeviceHeld <= 0 {
		return
	}
	if res.StageS == nil {
		res.StageS = map[string]float64{}
	}
	res.StageS[StageDeviceHeld] = round4(out.DeviceHeld.Seconds())
	for name, st := range out.Stages {
		if st.Inside > 0 {
			res.StageS[StageHeldPrefix+name] = round4(st.Inside.Seconds())
		}
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

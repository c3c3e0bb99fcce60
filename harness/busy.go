package harness

import (
	"fmt"
	"time"
)

// DeviceBusy is, per device ("target:index"), the time its device phase
// has been held by evaluations (and profiles) of this evaluator so far.
// Sampled before and after a run, it gives DeviceShare.
func (e *Evaluator) DeviceBusy() map[string]time.Duration {
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	out := map[string]time.Duration{}
	for t, p := range e.pools {
		for i, d := range p.Busy() {
			out[fmt.Sprintf("%s:%d", t, i)] = d
		}
	}
	return out
}

// DeviceLimits is, per device ("target:index", as DeviceBusy), how many
// evaluations it takes at once now: fewer than the pool's MaxHolders while
// its memory is crowded (lease.Lease.Crowded). A fleet worker claims no more
// than that for the device, so the coordinator's other devices take the
// rest. Devices of a target not used yet are absent.
func (e *Evaluator) DeviceLimits() map[string]int {
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	out := map[string]int{}
	for t, p := range e.pools {
		for i, n := range p.Limits() {
			out[fmt.Sprintf("%s:%d", t, i)] = n
		}
	}
	return out
}

// DeviceShare is the share of wall during which a device was held in its
// device phase between two DeviceBusy samples: the mean over the devices
// that were used (a one-GPU run: that GPU's busy time over the wall), and
// the busy time those devices summed. 0 when no device phase ran.
func DeviceShare(before, after map[string]time.Duration, wall time.Duration) (share float64, busy time.Duration) {
	used := 0
	for k, d := range after {
		if delta := d - before[k]; delta > 0 {
			busy += delta
			used++
		}
	}
	if used == 0 || wall <= 0 {
		return 0, busy
	}
	return busy.Seconds() / (wall.Seconds() * float64(used)), busy
}

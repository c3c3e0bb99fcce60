package worker

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A job's stages on Go's clock, split at the device phase's edges: the
// stage that held the device is inside it, the others outside, the wait
// for the device is the wait's, and DeviceHeld is the grant to the
// hand-back.
func TestWorkerStagesSplitAtTheDevicePhase(t *testing.T) {
	w := newWorker(t)
	const wait = 400 * time.Millisecond
	gate := func(ctx context.Context) (func(), error) {
		time.Sleep(wait) // another job's device phase
		return func() {}, nil
	}
	o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "staged", Gate: gate, Timeout: time.Minute,
		Args: map[string]any{"load": 0.2, "work": 0.3, "after": 0.2}})
	if err != nil || o.Result == nil {
		t.Fatalf("staged job: %v %+v", err, o)
	}
	t.Logf("gate wait %s, device held %s, stages %+v", o.GateWait, o.DeviceHeld, o.Stages)
	near := func(what string, got, want time.Duration) {
		t.Helper()
		// A loaded 2-core host delays events; never by less than nothing.
		if got < want-20*time.Millisecond || got > want+400*time.Millisecond {
			t.Errorf("%s: %s, want about %s", what, got, want)
		}
	}
	near("gate wait", o.GateWait, wait)
	near("device held", o.DeviceHeld, 300*time.Millisecond)
	near("work inside", o.Stages["work"].Inside, 300*time.Millisecond)
	near("load outside", o.Stages["load"].Outside, 200*time.Millisecond)
	near("after outside", o.Stages["after"].Outside, 200*time.Millisecond)
	near("wait_device outside", o.Stages["wait_device"].Outside, wait)
	for _, s := range []string{"load", "after", "start"} {
		if in := o.Stages[s].Inside; in != 0 {
			t.Errorf("stage %s: %s inside the device phase, want none", s, in)
		}
	}
	if o.Stages["work"].Outside > 50*time.Millisecond {
		t.Errorf("work: %s outside the device phase", o.Stages["work"].Outside)
	}
	if _, ok := o.Stages["start"]; !ok {
		t.Errorf("no start stage (fork to first event): %+v", o.Stages)
	}
}

// Job.IdleMax: a wave of jobs on one key ending together leaves a child
// for each (up to IdleMax), so the next wave makes none; the default keeps
// MaxIdlePerKey.
func TestWorkerIdleMaxKeepsAWave(t *testing.T) {
	w := newWorker(t)
	const n = MaxIdlePerKey + 2
	wave := func(env string, max int) []*Outcome {
		t.Helper()
		outs := make([]*Outcome, n)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Overlapping: each runs in a child of its own.
				o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "reusable", Args: map[string]any{"s": 1.0},
					Env: map[string]string{"KV_TEST_KEY": env}, Reuse: true, IdleMax: max, Timeout: time.Minute})
				if err != nil || o.Result == nil {
					t.Errorf("reusable job: %v %+v", err, o)
				}
				outs[i] = o
			}()
		}
		wg.Wait()
		return outs
	}
	wave("default", 0)
	if got := w.IdleChildren(); got != MaxIdlePerKey {
		t.Fatalf("default: %d idle children after a wave of %d, want %d", got, n, MaxIdlePerKey)
	}
	wave("wide", n)
	if got := w.IdleChildren(); got != MaxIdlePerKey+n {
		t.Fatalf("IdleMax %d: %d idle children in all after a wave of %d, want %d", n, got, n, MaxIdlePerKey+n)
	}
	reused := 0
	for _, o := range wave("wide", n) {
		if o != nil && o.Reused {
			reused++
		}
	}
	if reused != n {
		t.Fatalf("the second wave of %d ran %d jobs in kept children, want all", n, reused)
	}
}

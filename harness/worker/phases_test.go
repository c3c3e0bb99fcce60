package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
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

// DropIdle ends the idle children of one device (every variable it names,
// with its value) and no other: the next job there starts a fresh child,
// and the other device's child is still reused.
func TestWorkerDropIdleOneDevice(t *testing.T) {
	w := newWorker(t)
	run := func(dev string) *Outcome {
		t.Helper()
		o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "reusable", Args: map[string]any{"clean": true},
			Env: map[string]string{"KV_TEST_DEVICE": dev, "KV_TEST_TARGET": "gpu"}, Reuse: true, Timeout: time.Minute})
		if err != nil || o.Result == nil {
			t.Fatalf("reusable job on %s: %v %+v", dev, err, o)
		}
		return o
	}
	a, b := run("0"), run("1")
	if got := w.IdleChildren(); got != 2 {
		t.Fatalf("%d idle children after a job on each of two devices, want 2", got)
	}
	cases := []struct {
		env  map[string]string
		want int
	}{
		{nil, 0}, // names no device
		{map[string]string{"KV_TEST_DEVICE": "0", "KV_TEST_TARGET": "cpu"}, 0},
		{map[string]string{"KV_TEST_DEVICE": "2"}, 0},
		{map[string]string{"KV_TEST_DEVICE": "0", "KV_TEST_TARGET": "gpu"}, 1},
	}
	for _, c := range cases {
		if got := w.DropIdle(c.env); got != c.want {
			t.Errorf("DropIdle(%v) ended %d, want %d", c.env, got, c.want)
		}
	}
	if !ended(a.Pid, 30*time.Second) {
		t.Errorf("device 0's idle child %d is still running", a.Pid)
	}
	if got := w.IdleChildren(); got != 1 {
		t.Fatalf("%d idle children left, want device 1's", got)
	}
	if o := run("0"); o.Reused || o.Pid == a.Pid {
		t.Errorf("device 0's next job ran in a kept child (%d, reused %v)", o.Pid, o.Reused)
	}
	if o := run("1"); !o.Reused || o.Pid != b.Pid {
		t.Errorf("device 1's next job ran in child %d (reused %v), want its kept child %d", o.Pid, o.Reused, b.Pid)
	}
}

// ended waits up to d for pid to be gone or a zombie (killed, not yet
// reaped by the worker's parent).
func ended(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return true
		}
	}
	return false
}

package harness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A timed evaluation's stage_s says how long it held its device and which
// stages ran while it did: on the CPU the device phase starts at timing,
// so the correctness trials are outside it and timing inside.
func TestStageSecondsSplitAtTheDevicePhase(t *testing.T) {
	ev := reuseEvaluator(t)
	res := evalNormalize(t, ev, candNormalize, true)
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s\n%s", res.Verdict, dump(res))
	}
	s := res.StageS
	t.Logf("stage_s %v", s)
	held := s[StageDeviceHeld]
	if held <= 0 || held > res.WallS {
		t.Fatalf("device_held %.3f s of a %.3f s evaluation", held, res.WallS)
	}
	if s[StageHeldPrefix+"timing"] <= 0 {
		t.Errorf("timing did not run inside the device phase: %v", s)
	}
	for _, outside := range []string{"load_reference", "load_candidate", "init", "correctness"} {
		if v, ok := s[StageHeldPrefix+outside]; ok {
			t.Errorf("%s held the device %.3f s: on the CPU the device phase starts at timing", outside, v)
		}
	}
	sum := 0.0
	for k, v := range s {
		if len(k) > len(StageHeldPrefix) && k[:len(StageHeldPrefix)] == StageHeldPrefix {
			sum += v
		}
	}
	if sum > held+0.01 || sum < held*0.9 {
		t.Errorf("the held stages add up to %.4f s, the device phase was %.4f s", sum, held)
	}
}

// A wave of evaluations on one device, more than worker.MaxIdlePerKey,
// leaves a child for each (the pool's holders per device bound them), so
// the next wave makes no new process: a search's slots ending together
// find their children again.
func TestReuseKeepsAWaveOfChildren(t *testing.T) {
	ev := reuseEvaluator(t)
	if _, err := ev.WorkerInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
	const n = 6 // the CPU pool's holders (lease.DefaultMaxHolders), above worker.MaxIdlePerKey
	wave := func(w int) []*EvalResult {
		out := make([]*EvalResult, n)
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Distinct (no cache), and overlapping: the first call sleeps.
				c := candidate(fmt.Sprintf("import time\n# wave %d, %d\n", w, i),
					"        if self.cache is None:\n            self.cache = 1\n            time.sleep(2)\n"+normBody+"        return x / n")
				out[i] = evalNormalize(t, ev, c, false)
			}()
		}
		wg.Wait()
		return out
	}
	t0 := time.Now()
	for i, r := range wave(1) {
		if r.Verdict != VerdictPass || !r.Process.Kept {
			t.Fatalf("first wave, evaluation %d: %s, process %+v\n%s", i, r.Verdict, r.Process, dump(r))
		}
	}
	reused := 0
	for _, r := range wave(2) {
		if r.Process.Job > 1 {
			reused++
		}
	}
	t.Logf("two waves of %d in %s", n, time.Since(t0).Round(time.Second))
	if reused != n {
		t.Errorf("the second wave ran %d of %d evaluations in kept children", reused, n)
	}
}

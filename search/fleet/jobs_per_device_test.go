package fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// A device takes as many jobs at once as it offers (Device.Jobs), never
// more, however often the worker lists it; jobs spread over the devices
// before they stack on one.
func TestClaimJobsPerDevice(t *testing.T) {
	gpu := func(i, jobs int) Device {
		return Device{Index: i, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100", Jobs: jobs}
	}
	for _, tc := range []struct {
		name   string
		devs   []Device
		free   []int
		queued int
		want   map[int]int // jobs per device index
	}{
		{"three slots on one device", []Device{gpu(0, 3)}, []int{0, 0, 0}, 5, map[int]int{0: 3}},
		{"listed more often than it has room", []Device{gpu(0, 3)}, []int{0, 0, 0, 0, 0}, 5, map[int]int{0: 3}},
		{"a device without Jobs takes one", []Device{gpu(0, 0)}, []int{0, 0}, 5, map[int]int{0: 1}},
		{"spread before stacked", []Device{gpu(0, 2), gpu(1, 2)}, []int{0, 0, 1, 1}, 2, map[int]int{0: 1, 1: 1}},
		{"fewer jobs than slots", []Device{gpu(0, 2), gpu(1, 2)}, []int{0, 0, 1, 1}, 3, map[int]int{0: 2, 1: 1}},
		{"an unknown index gets nothing", []Device{gpu(0, 2)}, []int{7, 7, 0}, 5, map[int]int{0: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			q := newTestQueue(t, nil)
			register(t, q, "w", tc.devs...)
			for i := 0; i < tc.queued; i++ {
				q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", fmt.Sprintf("code %d", i), 0, false)
			}
			jobs, err := q.Claim(ctx, "w", tc.free)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int]int{}
			for _, j := range jobs {
				got[j.Device]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("claimed per device %v, want %v", got, tc.want)
			}
		})
	}
}

// occupancy counts a device busy while any job runs on it, once.
func TestOccupancy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		start bool
		at    float64
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  float64 // the reports' sum
	}{
		{"one job", []step{{true, 0}, {false, 2}}, 2},
		{"two overlapping", []step{{true, 0}, {true, 1}, {false, 2}, {false, 3}}, 3},
		{"nested", []step{{true, 0}, {true, 1}, {false, 1.5}, {false, 4}}, 4},
		{"a gap is not busy", []step{{true, 0}, {false, 1}, {true, 5}, {false, 6}}, 2},
		{"three at once", []step{{true, 0}, {true, 0}, {true, 0}, {false, 1}, {false, 1}, {false, 1}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o occupancy
			sum := 0.0
			for _, s := range tc.steps {
				if s.start {
					o.start(at(s.at))
				} else {
					sum += o.finish(at(s.at)).Seconds()
				}
			}
			if sum != tc.want || o.active != 0 {
				t.Fatalf("busy %.2f s (active %d), want %.2f s", sum, o.active, tc.want)
			}
		})
	}
}

// concurrencyRunner records how many jobs run at once on each device; it
// stands in for the harness, whose lease pool does the real placing.
type concurrencyRunner struct {
	d      time.Duration
	mu     sync.Mutex
	now    map[int]int
	peak   map[int]int
	ran    map[string]int
	wrongs int // a job run on a device other than the one it was claimed for
}

func (r *concurrencyRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	r.mu.Lock()
	r.now[dev.Index]++
	r.peak[dev.Index] = max(r.peak[dev.Index], r.now[dev.Index])
	r.ran[job.ID]++
	if dev.Index != job.Device {
		r.wrongs++
	}
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.now[dev.Index]--; r.mu.Unlock() }()
	select {
	case <-time.After(r.d):
		return &search.Result{Verdict: search.VerdictPass, Correct: true, TimeS: 1e-3}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A worker offering Jobs per device keeps that many in flight on each
// (so builds overlap the device phase, as in process), runs each job once,
// and reports device occupancy, not the sum of overlapping job walls.
func TestWorkerRunsJobsPerDevice(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	coord := listenTest(t, q)
	const perDevice, devices, jobs = 3, 2, 18
	const each = 400 * time.Millisecond
	var ids []string
	for i := 0; i < jobs; i++ {
		id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", fmt.Sprintf("code %d", i), 0, false)
		ids = append(ids, id)
	}
	r := &concurrencyRunner{d: each, now: map[int]int{}, peak: map[int]int{}, ran: map[string]int{}}
	var devs []Device
	for i := 0; i < devices; i++ {
		devs = append(devs, Device{Index: i, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100", Jobs: perDevice})
	}
	w := &Worker{Coordinator: coord.URL(), Token: "tk", Name: "w", Devices: devs, Runner: r, Drain: time.Second}
	wctx, term := context.WithCancel(ctx)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- w.Run(wctx) }()
	waitFor(t, 30*time.Second, "every job done", func() bool {
		s, _ := Snapshot(ctx, q)
		return s != nil && s.Done == jobs
	})
	wall := time.Since(t0)
	s, _ := Snapshot(ctx, q)
	term()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < devices; i++ {
		if r.peak[i] != perDevice {
			t.Errorf("device %d ran at most %d jobs at once, want %d", i, r.peak[i], perDevice)
		}
	}
	for _, id := range ids {
		if r.ran[id] != 1 {
			t.Errorf("job %s ran %d times", id, r.ran[id])
		}
	}
	if r.wrongs != 0 {
		t.Errorf("%d jobs ran on a device other than their claim's", r.wrongs)
	}
	// 18 jobs of 0.4 s, 6 at a time: 3 waves, about 1.2 s per device.
	// Summing walls would say 7.2 s over 2 devices.
	if len(s.Workers) != 1 {
		t.Fatalf("workers: %+v", s.Workers)
	}
	busy, jobWalls := s.Workers[0].BusyS, float64(jobs)*each.Seconds()
	perDev := busy / devices
	t.Logf("wall %.2f s, device occupancy %.2f s (%.2f s per device), job walls %.1f s, utilization %.0f%%", wall.Seconds(), busy, perDev, jobWalls, 100*s.Workers[0].Utilization)
	if perDev < 1.1 || perDev > wall.Seconds() {
		t.Errorf("busy %.2f s per device; want between the 1.2 s of three waves (less rounding) and the wall %.2f s", perDev, wall.Seconds())
	}
}

// A worker offers a device no more slots than the evaluation service
// takes on it now (Worker.Limit, lowered where its memory was crowded),
// less what runs there; without a word from it, the device's Jobs.
func TestFreeSlotsFollowTheDeviceLimit(t *testing.T) {
	devs := []Device{{Index: 0, Target: "nvidia", Jobs: 6}, {Index: 1, Target: "nvidia", Jobs: 6}}
	for _, tc := range []struct {
		name    string
		limit   map[int]int // 0 or absent: no word
		running map[int]int
		want    map[int]int // free slots per device index
	}{
		{"no limit", nil, nil, map[int]int{0: 6, 1: 6}},
		{"one device crowded", map[int]int{0: 2}, nil, map[int]int{0: 2, 1: 6}},
		{"crowded below what runs there", map[int]int{0: 2}, map[int]int{0: 3, 1: 1}, map[int]int{1: 5}},
		{"a limit above Jobs changes nothing", map[int]int{0: 24, 1: 0}, nil, map[int]int{0: 6, 1: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Worker{Devices: devs, held: map[string]*heldJob{}}
			if tc.limit != nil {
				w.Limit = func(d Device) int { return tc.limit[d.Index] }
			}
			for dev, n := range tc.running {
				for i := 0; i < n; i++ {
					w.held[fmt.Sprintf("%d-%d", dev, i)] = &heldJob{job: Job{ID: fmt.Sprint(i), Device: dev}}
				}
			}
			got := map[int]int{}
			for _, idx := range w.free() {
				got[idx]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("free slots per device %v, want %v", got, tc.want)
			}
		})
	}
}

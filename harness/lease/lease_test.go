package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
)

// fakeCPUs is a pool of n fake CPU "devices", so fairness and exclusivity
// are tested without GPUs.
func fakeCPUs(n, maxHolders int) *Pool {
	var devs []Device
	for i := 0; i < n; i++ {
		devs = append(devs, Device{Index: i, Name: "fake cpu"})
	}
	return NewPool(target.CPU, devs, maxHolders)
}

func TestConcurrentLeasesLandOnDistinctDevices(t *testing.T) {
	p := fakeCPUs(3, 0)
	ctx := context.Background()
	var leases []*Lease
	seen := map[int]bool{}
	for i := 0; i < 3; i++ {
		l, err := p.Acquire(ctx, Request{})
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
		seen[l.Device().Index] = true
	}
	if len(seen) != 3 {
		t.Fatalf("3 concurrent leases on 3 devices landed on %v", seen)
	}
	// A fourth goes to one of them (least loaded), not beyond the pool.
	l4, err := p.Acquire(ctx, Request{})
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Holders(); h[0]+h[1]+h[2] != 4 || h[l4.Device().Index] != 2 {
		t.Fatalf("holders %v", h)
	}
	for _, l := range append(leases, l4) {
		l.Release()
		l.Release() // idempotent
	}
	if h := p.Holders(); h[0]+h[1]+h[2] != 0 {
		t.Fatalf("holders after release %v", h)
	}
}

func TestSequentialLeasesRoundRobin(t *testing.T) {
	p := fakeCPUs(3, 0)
	var got []int
	for i := 0; i < 6; i++ {
		l, err := p.Acquire(context.Background(), Request{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Device().Index)
		l.Release()
	}
	want := []int{0, 1, 2, 0, 1, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sequential leases went to %v, want %v (every device used in turn)", got, want)
		}
	}
}

func TestConcurrentEvaluationsUseEveryDevice(t *testing.T) {
	// 12 jobs, each holding its device's exclusive phase for 30 ms, on 3
	// devices: all three are used at once, and no device runs two phases.
	p := fakeCPUs(3, 2)
	var inPhase [3]atomic.Int32
	var maxPar atomic.Int32
	var running atomic.Int32
	per := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.Acquire(context.Background(), Request{})
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Release()
			rel, err := l.Exclusive(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			idx := l.Device().Index
			if n := inPhase[idx].Add(1); n != 1 {
				t.Errorf("device %d runs %d exclusive phases at once", idx, n)
			}
			if n := running.Add(1); n > maxPar.Load() {
				maxPar.Store(n)
			}
			time.Sleep(30 * time.Millisecond)
			running.Add(-1)
			inPhase[idx].Add(-1)
			rel()
			mu.Lock()
			per[idx]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if maxPar.Load() != 3 {
		t.Errorf("at most %d devices ran at once, want 3", maxPar.Load())
	}
	for i := 0; i < 3; i++ {
		if per[i] != 4 {
			t.Errorf("device load %v, want 4 each", per)
		}
	}
}

func TestExclusiveLeaseExcludesOthers(t *testing.T) {
	p := fakeCPUs(1, 0)
	ctx := context.Background()
	prof, err := p.Acquire(ctx, Request{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := p.Acquire(ctx, Request{}) // placing is fine: its CPU-side work may overlap
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := other.Exclusive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("device phase granted while a profile holds the device: %v", err)
	}
	if _, err := p.Acquire(short, Request{Exclusive: true}); err == nil {
		t.Fatal("a second exclusive lease was granted")
	}
	got := make(chan struct{})
	go func() {
		rel, err := other.Exclusive(ctx)
		if err == nil {
			rel()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("phase granted before the profile released")
	case <-time.After(30 * time.Millisecond):
	}
	prof.Release()
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("phase not granted after the profile released")
	}
	other.Release()
}

func TestFullPoolQueuesInOrder(t *testing.T) {
	p := fakeCPUs(1, 1)
	ctx := context.Background()
	first, _ := p.Acquire(ctx, Request{})
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l, err := p.Acquire(ctx, Request{})
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			time.Sleep(5 * time.Millisecond)
			l.Release()
		}(i)
		time.Sleep(20 * time.Millisecond) // queue them in a known order
	}
	first.Release()
	wg.Wait()
	close(order)
	want := 0
	for i := range order {
		if i != want {
			t.Fatalf("waiter %d served out of turn (want %d)", i, want)
		}
		want++
	}
	// A cancelled waiter leaves the queue and the pool intact.
	hold, _ := p.Acquire(ctx, Request{})
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(short, Request{}); err == nil {
		t.Fatal("a full pool granted a lease")
	}
	hold.Release()
	if l, err := p.Acquire(ctx, Request{}); err != nil {
		t.Fatal(err)
	} else {
		l.Release()
	}
}

func TestSelectDeviceAndEnv(t *testing.T) {
	nv := NewPool(target.NVIDIA, []Device{{Index: 0, UUID: "GPU-aaaa"}, {Index: 1, UUID: "GPU-bbbb"}}, 0)
	ctx := context.Background()
	for sel, want := range map[string]int{"1": 1, "GPU-aaaa": 0, "gpu-BBBB": 1} {
		l, err := nv.Acquire(ctx, Request{Device: sel})
		if err != nil {
			t.Fatal(err)
		}
		if l.Device().Index != want {
			t.Errorf("device %q gave %d", sel, l.Device().Index)
		}
		env := l.Env()
		if env["CUDA_VISIBLE_DEVICES"] != l.Device().UUID || env[EnvDevice] != []string{"0", "1"}[want] {
			t.Errorf("env %v", env)
		}
		l.Release()
	}
	if _, err := nv.Acquire(ctx, Request{Device: "7"}); err == nil || err.Error() != `device "7": no such nvidia device (have 0 (GPU-aaaa), 1 (GPU-bbbb))` {
		t.Errorf("unknown device: %v", err)
	}
	amd := NewPool(target.AMD, []Device{{Index: 3, UUID: "0x1234"}}, 0)
	l, _ := amd.Acquire(ctx, Request{})
	if l.Env()["HIP_VISIBLE_DEVICES"] != "3" {
		t.Errorf("amd env %v", l.Env())
	}
	l.Release()
	cpu := fakeCPUs(1, 0)
	l, _ = cpu.Acquire(ctx, Request{})
	if len(l.Env()) != 1 {
		t.Errorf("cpu env pins nothing but the index: %v", l.Env())
	}
	l.Release()

	empty := NewPool(target.AMD, nil, 0)
	_, err := empty.Acquire(ctx, Request{})
	var nd *NoDeviceError
	if !errors.As(err, &nd) || !errors.Is(err, ErrNoDevice) || err.Error() != "no AMD device found" {
		t.Errorf("empty pool: %v", err)
	}
}

// Busy counts the time the exclusive phase was held, finished holds and
// the one in progress, per device, and nothing for shared holds.
func TestBusyCountsTheExclusivePhase(t *testing.T) {
	p := NewPool(target.NVIDIA, []Device{{Index: 0}, {Index: 1}}, 4)
	ctx := context.Background()
	l, err := p.Acquire(ctx, Request{Device: "0"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // shared: not busy
	if b := p.Busy()[0]; b != 0 {
		t.Fatalf("busy %v before any exclusive phase", b)
	}
	rel, err := l.Exclusive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if b := p.Busy()[0]; b < 50*time.Millisecond {
		t.Errorf("a hold in progress counts %v, want at least 50ms", b)
	}
	rel()
	rel() // a second release changes nothing
	held := p.Busy()[0]
	time.Sleep(30 * time.Millisecond)
	if b := p.Busy()[0]; b != held || b < 50*time.Millisecond {
		t.Errorf("after the release busy went from %v to %v", held, b)
	}
	if b := p.Busy()[1]; b != 0 {
		t.Errorf("device 1 was never held, busy %v", b)
	}
	l.Release()
}

func TestHoldersPerGPUShareTheHostsCores(t *testing.T) {
	for _, c := range []struct{ gpus, cpus, want int }{
		{1, 16, 16},                // the H100 box: one job per core
		{4, 64, 16},                // the cores shared among the GPUs
		{1, 2, DefaultMaxHolders},  // a small host still overlaps builds with timing
		{0, 8, 8},                  // no GPU counted: one
		{1, 128, MaxHoldersPerGPU}, // device memory bounds it
		{3, 16, DefaultMaxHolders}, // 16/3 rounds up to 6
	} {
		if got := HoldersPerGPU(c.gpus, c.cpus); got != c.want {
			t.Errorf("HoldersPerGPU(%d gpus, %d cpus) = %d, want %d", c.gpus, c.cpus, got, c.want)
		}
	}
}

// An Alone lease waits for its device to empty, keeps new leases off it
// while it waits (they go to the other device), and holds it alone until
// released; a cancelled Alone wait leaves the device usable.
func TestAloneLeaseHasTheDeviceToItself(t *testing.T) {
	p := fakeCPUs(2, 3)
	ctx := context.Background()
	a, _ := p.Acquire(ctx, Request{Device: "0"})
	b, _ := p.Acquire(ctx, Request{Device: "0"})
	got := make(chan *Lease, 1)
	go func() {
		l, err := p.Acquire(ctx, Request{Device: "0", Alone: true})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitUntil(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.slots[0].aloneWaiting == 1 })
	// New work goes to the other device while device 0 drains.
	for i := 0; i < 2; i++ {
		l, err := p.Acquire(ctx, Request{})
		if err != nil || l.Device().Index != 1 {
			t.Fatalf("placed on %v (%v) while an Alone lease waits for device 0", l.Device(), err)
		}
		defer l.Release()
	}
	a.Release()
	select {
	case <-got:
		t.Fatal("Alone granted beside another holder")
	case <-time.After(30 * time.Millisecond):
	}
	b.Release()
	var alone *Lease
	select {
	case alone = <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("Alone not granted once the device emptied")
	}
	if alone.Device().Index != 0 || p.Holders()[0] != 1 {
		t.Fatalf("Alone on %d, holders %v", alone.Device().Index, p.Holders())
	}
	// Nothing joins it: a request for device 0 waits until it is released.
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := p.Acquire(short, Request{Device: "0"}); err == nil {
		t.Fatal("a lease was placed beside an Alone lease")
	}
	alone.Release()
	l, err := p.Acquire(ctx, Request{Device: "0"})
	if err != nil {
		t.Fatal(err)
	}
	// A cancelled Alone wait takes its hold off the device.
	if _, err := p.Acquire(short, Request{Device: "0", Alone: true}); err == nil {
		t.Fatal("Alone granted beside a holder")
	}
	if l2, err := p.Acquire(ctx, Request{Device: "0"}); err != nil {
		t.Fatal(err)
	} else {
		l2.Release()
	}
	l.Release()
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
	}
}

// A device whose evaluations ran out of memory beside each other takes a
// quarter fewer of them at once than it held (never fewer than
// MinHoldersCrowded); the other evaluations of the same crowd cut nothing
// more, one placed under the new limit does; the other devices keep their
// limit; and it grows back by one after every RecoverAfter leases released.
func TestCrowdedDeviceTakesFewerUntilItRecovers(t *testing.T) {
	p := fakeCPUs(2, 8)
	ctx := context.Background()
	var held []*Lease
	for i := 0; i < 8; i++ {
		l, err := p.Acquire(ctx, Request{Device: "0"})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	first := held[0]
	first.Release() // as retryAlone does, before its rerun
	if got := first.Crowded(); got != 6 {
		t.Fatalf("crowded with 8 held at once: limit %d, want 6", got)
	}
	if got := p.Limits(); got[0] != 6 || got[1] != 8 {
		t.Fatalf("Limits %v, want 6 on the crowded device and 8 on the other", got)
	}
	// The rest of the same crowd drains; their reports change nothing.
	for _, l := range held[1:4] {
		l.Release()
		if got := l.Crowded(); got != 6 {
			t.Fatalf("a second report of the same crowd cut the limit to %d", got)
		}
	}
	held = held[4:] // 4 held
	tryAcquire := func(dev string) *Lease {
		short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
		l, _ := p.Acquire(short, Request{Device: dev})
		return l
	}
	for i := 0; i < 2; i++ {
		l := tryAcquire("0")
		if l == nil {
			t.Fatalf("%d held under a limit of 6: a lease should be placed", len(held))
		}
		held = append(held, l)
	}
	if l := tryAcquire("0"); l != nil {
		t.Fatal("a seventh lease was placed on a device cut to 6")
	}
	// One placed under the new limit ran out too: a new cut, from the 6.
	if got := held[len(held)-1].Crowded(); got != 4 {
		t.Fatalf("a new crowd of 6: limit %d, want 4", got)
	}
	other, err := p.Acquire(ctx, Request{Device: "1"})
	if err != nil || other.Limit() != 8 {
		t.Fatalf("the other device's limit changed: %v %v", other, err)
	}
	other.Release()
	for _, l := range held {
		l.Release()
	}
	// Crowds of one or two stop at the floor.
	for i := 0; i < 3; i++ {
		l, _ := p.Acquire(ctx, Request{Device: "0"})
		l.Release()
		l.Crowded()
	}
	if got := p.Limits()[0]; got != MinHoldersCrowded {
		t.Fatalf("limit after crowds of one: %d, want the floor %d", got, MinHoldersCrowded)
	}
	for i := 0; i < RecoverAfter; i++ {
		l, err := p.Acquire(ctx, Request{Device: "0"})
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	if got := p.Limits()[0]; got != MinHoldersCrowded+1 {
		t.Fatalf("limit after %d calm releases: %d, want %d", RecoverAfter, got, MinHoldersCrowded+1)
	}
}

// A device that holds 6 evaluations' memory and no more, under 12 at a
// time that rerun alone whatever ran out beside others (as retryAlone
// does): the limit settles around 6 instead of falling to the floor, and
// the reruns stay few.
func TestCrowdedLimitSettlesWhereTheMemoryIs(t *testing.T) {
	const fits, workers, each = 6, 12, 40
	p := fakeCPUs(1, 16)
	ctx := context.Background()
	var mu sync.Mutex
	reruns, lowest := 0, 16
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l, err := p.Acquire(ctx, Request{})
				if err != nil {
					t.Error(err)
					return
				}
				crowded := p.Holders()[0] > fits
				time.Sleep(time.Millisecond)
				l.Release()
				if !crowded {
					continue
				}
				a, err := p.Acquire(ctx, Request{Alone: true})
				if err != nil {
					t.Error(err)
					return
				}
				a.Release()
				n := l.Crowded()
				mu.Lock()
				reruns, lowest = reruns+1, min(lowest, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("reruns %d of %d, lowest limit %d, limit at the end %d", reruns, workers*each, lowest, p.Limits()[0])
	if lowest < fits/2 {
		t.Errorf("the limit fell to %d for a device that holds %d", lowest, fits)
	}
	if reruns > workers*each/4 {
		t.Errorf("%d of %d evaluations ran again alone", reruns, workers*each)
	}
}

// Package lease hands out the devices of a host: one pool per target, one
// slot per device. A lease pins a process to its device (through the
// target's visible-devices variable) and grants the device's exclusive
// phase, the part of a job that must run alone for its timing or counters
// to mean anything. Work that does not need the device (loading, compiling,
// tracing) overlaps freely, on every device at once.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
)

// Device is one leasable device.
type Device struct {
	Target target.Name `json:"target"`
	// Index is the device's number in discovery order (NVML, amd-smi), or a
	// fake index for the CPU.
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name"`
	// SpecKey is the hardware spec row of the device ("" when none matches).
	SpecKey string `json:"spec_key,omitempty"`
	// CC is an NVIDIA device's compute capability ("9.0"), "" where
	// discovery did not give one: what the build step builds for.
	CC string `json:"cc,omitempty"`
}

// ID names the device for the visible-devices variable: the UUID where the
// runtime takes one (CUDA does, and it avoids NVML's PCI order differing
// from CUDA's default order), else the index.
func (d Device) ID() string {
	if d.Target == target.NVIDIA && strings.HasPrefix(d.UUID, "GPU-") {
		return d.UUID
	}
	return strconv.Itoa(d.Index)
}

// EnvDevice is set in every leased child to the device's index, so a child
// (and a test) can say where it ran whatever the target.
const EnvDevice = "KEVOLVE_DEVICE_INDEX"

// DefaultMaxHolders bounds how many jobs are placed on one device at once
// where nothing else says (the CPU target, a pool made with 0): their
// CPU-side stages overlap, their device phases queue. A job of the
// project's own loaders spends about 1 s before its device phase (fork,
// imports, CUDA context, kernel warm-up) against 0.2-0.5 s inside it, so
// six keep a device fed.
const DefaultMaxHolders = 6

// MaxHoldersPerGPU caps HoldersPerGPU: each holder keeps a CUDA context
// (~0.5 GB) and its models on the device before its device phase.
const MaxHoldersPerGPU = 24

// HoldersPerGPU is how many jobs to place on each of a host's gpus GPUs.
// Real candidates build before their device phase (load_inline's host
// compiler and nvcc, Triton), 15-60 s of CPU each against well under a
// second on the device, so a GPU keeps the host's cores busy: its share
// of them, never fewer than DefaultMaxHolders, at most MaxHoldersPerGPU.
// (Six per GPU held a 16-core H100 host's CPU at 9 busy cores over a
// load_inline sweep.)
func HoldersPerGPU(gpus, cpus int) int {
	if gpus < 1 {
		gpus = 1
	}
	return min(MaxHoldersPerGPU, max(DefaultMaxHolders, (cpus+gpus-1)/gpus))
}

// ErrNoDevice is wrapped by errors for a target with no device on this host.
var ErrNoDevice = errors.New("no device")

// NoDeviceError says a target has no device here (not a verdict: nothing ran).
type NoDeviceError struct {
	Target target.Name
	Why    string
}

func (e *NoDeviceError) Error() string {
	msg := fmt.Sprintf("no %s device found", vendorWord(e.Target))
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

func (e *NoDeviceError) Unwrap() error { return ErrNoDevice }

func vendorWord(t target.Name) string {
	switch t {
	case target.NVIDIA:
		return "NVIDIA"
	case target.AMD:
		return "AMD"
	}
	return string(t)
}

// Request asks for a lease.
type Request struct {
	// Device is an index or UUID ("" = any device of the pool).
	Device string
	// Exclusive holds the device's exclusive phase for the whole lease (a
	// profile: counters taken while another kernel runs are meaningless).
	Exclusive bool
	// Alone gives the device to this lease only: it is placed once no
	// other lease holds the device, and no other is placed there until it
	// is released. Device memory is not shared out by the exclusive phase:
	// an evaluation that ran out of it beside others runs again alone
	// (harness: retryAlone), so that what it needs, not its neighbours'
	// processes, decides its verdict. Without Device, the device with the
	// fewest holders now is the one waited for.
	Alone bool
}

type slot struct {
	dev     Device
	holders int
	// limit is how many leases this device takes at once now: the pool's
	// maxHolders until its evaluations run out of device memory beside
	// each other (Lease.Crowded), then fewer, growing back by one after
	// every RecoverAfter leases released without that. gen counts the
	// cuts; peak is the most leases held at once since the last one.
	limit, calm, gen, peak int
	phase                  chan struct{} // the exclusive phase: a one-token semaphore, FIFO for waiters
	granted                int           // leases ever placed here, for tie-breaking
	// alone: an Alone lease holds the device; aloneWaiting: Alone requests
	// wait for it to empty, and nothing new is placed here meanwhile.
	alone        bool
	aloneWaiting int
	// The exclusive phase's time held: finished holds, and the start (unix
	// ns) of the one in progress, 0 when free. Written by the holder only.
	busyNs, heldSince atomic.Int64
}

// busy is the time the exclusive phase has been held so far.
func (s *slot) busy(now time.Time) time.Duration {
	d := s.busyNs.Load()
	if start := s.heldSince.Load(); start != 0 {
		d += max(0, now.UnixNano()-start)
	}
	return time.Duration(d)
}

// Pool is the devices of one target.
type Pool struct {
	target     target.Name
	maxHolders int

	mu      sync.Mutex
	slots   []*slot
	waiters []*waiter // FIFO
	next    int       // round-robin start for ties
}

type waiter struct {
	req   Request
	cands []*slot // the slots it may take (one, for an Alone request)
	ready chan grant
}

// NewPool returns a pool over devs (all of one target). maxHolders <= 0
// means DefaultMaxHolders.
func NewPool(t target.Name, devs []Device, maxHolders int) *Pool {
	if maxHolders <= 0 {
		maxHolders = DefaultMaxHolders
	}
	p := &Pool{target: t, maxHolders: maxHolders}
	for _, d := range devs {
		d.Target = t
		p.slots = append(p.slots, &slot{dev: d, limit: maxHolders, phase: make(chan struct{}, 1)})
	}
	return p
}

// Busy is, per device index, the time its exclusive phase (an
// evaluation's device phase, or a profile) has been held since the pool
// was made: sampled before and after a run, the share of the run's wall
// time the device was in use.
func (p *Pool) Busy() map[int]time.Duration {
	now := time.Now()
	out := map[int]time.Duration{}
	for _, s := range p.slots {
		out[s.dev.Index] = s.busy(now)
	}
	return out
}

// Target is the pool's target.
func (p *Pool) Target() target.Name { return p.target }

// MaxHolders is how many leases the pool places on one device at once
// while its evaluations fit in its memory (Lease.Crowded lowers it per device).
func (p *Pool) MaxHolders() int { return p.maxHolders }

// RecoverAfter is how many leases a crowded device releases (none of them
// out of memory, none alone) before it takes one more at once again: each
// step up past what fits costs a crowd's reruns, so it comes slowly (16
// ran a device that holds 6 at 5-7, with twice the reruns).
const RecoverAfter = 64

// MinHoldersCrowded is the fewest leases Lease.Crowded leaves a device:
// its device phase still overlaps one job's loading.
const MinHoldersCrowded = 2

// Devices lists the pool's devices in index order.
func (p *Pool) Devices() []Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Device, len(p.slots))
	for i, s := range p.slots {
		out[i] = s.dev
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Limits reports, per device index, how many leases the device takes at
// once now (MaxHolders, or fewer while it is crowded: Lease.Crowded).
func (p *Pool) Limits() map[int]int { return p.perDevice(func(s *slot) int { return s.limit }) }

// Holders reports how many leases each device index holds now.
func (p *Pool) Holders() map[int]int { return p.perDevice(func(s *slot) int { return s.holders }) }

// perDevice reads one figure of every slot, by device index, under the lock.
func (p *Pool) perDevice(figure func(*slot) int) map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[int]int{}
	for _, s := range p.slots {
		m[s.dev.Index] = figure(s)
	}
	return m
}

// match finds the slots a request may use; an unknown device is an error
// that lists the pool's devices.
func (p *Pool) match(sel string) ([]*slot, error) {
	if len(p.slots) == 0 {
		return nil, &NoDeviceError{Target: p.target}
	}
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return p.slots, nil
	}
	for _, s := range p.slots {
		if strconv.Itoa(s.dev.Index) == sel || (s.dev.UUID != "" && strings.EqualFold(s.dev.UUID, sel)) {
			return []*slot{s}, nil
		}
	}
	var known []string
	for _, s := range p.slots {
		k := strconv.Itoa(s.dev.Index)
		if s.dev.UUID != "" {
			k += " (" + s.dev.UUID + ")"
		}
		known = append(known, k)
	}
	return nil, &UnknownDeviceError{Device: sel, Msg: fmt.Sprintf("device %q: no such %s device (have %s)", sel, p.target, strings.Join(known, ", "))}
}

// UnknownDeviceError is a request for a device the pool does not have.
type UnknownDeviceError struct {
	Device string
	Msg    string
}

func (e *UnknownDeviceError) Error() string { return e.Msg }

// pick returns the least-loaded usable slot, ties broken round-robin so
// sequential work spreads over every device; nil when all are full.
func (p *Pool) pick(cands []*slot, alone bool) *slot {
	var best *slot
	for i := range p.slots {
		s := p.slots[(p.next+i)%len(p.slots)]
		if !contains(cands, s) || s.holders >= s.limit || s.alone || (alone && s.holders > 0) || (!alone && s.aloneWaiting > 0) {
			continue
		}
		if best == nil || s.holders < best.holders {
			best = s
		}
	}
	return best
}

func contains(ss []*slot, s *slot) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// grant is a placed lease's device and the generation of its limit then.
type grant struct {
	s   *slot
	gen int
}

func (p *Pool) place(s *slot, alone bool) grant {
	s.holders++
	s.granted++
	s.alone = alone
	s.peak = max(s.peak, s.holders)
	for i, x := range p.slots {
		if x == s {
			p.next = (i + 1) % len(p.slots)
		}
	}
	return grant{s, s.gen}
}

// Acquire places a lease on a device, waiting (first come, first served)
// while every matching device is full; with Exclusive it then waits for
// the device's exclusive phase and keeps it until Release.
func (p *Pool) Acquire(ctx context.Context, req Request) (*Lease, error) {
	cands, err := p.match(req.Device)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	var s *slot
	if req.Alone {
		// One device is waited for, so that it can empty.
		cands = []*slot{p.fewestHolders(cands)}
	}
	if req.Alone || !p.othersWait() {
		s = p.pick(cands, req.Alone)
	}
	var g grant
	if s != nil {
		g = p.place(s, req.Alone)
		p.mu.Unlock()
	} else {
		w := &waiter{req: req, cands: cands, ready: make(chan grant, 1)}
		p.waiters = append(p.waiters, w)
		if req.Alone {
			cands[0].aloneWaiting++
		}
		p.mu.Unlock()
		select {
		case g = <-w.ready:
		case <-ctx.Done():
			p.mu.Lock()
			removed := p.removeWaiter(w)
			p.mu.Unlock()
			if !removed { // granted while we gave up: hand it back
				g = <-w.ready
				p.release(g.s, req.Alone)
			}
			return nil, fmt.Errorf("waiting for a %s device: %w", p.target, ctx.Err())
		}
	}
	l := &Lease{pool: p, slot: g.s, gen: g.gen, alone: req.Alone}
	if req.Exclusive {
		rel, err := l.Exclusive(ctx)
		if err != nil {
			l.Release()
			return nil, err
		}
		l.held = rel
	}
	return l, nil
}

func (p *Pool) removeWaiter(w *waiter) bool {
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			if w.req.Alone {
				w.cands[0].aloneWaiting--
			}
			return true
		}
	}
	return false
}

// othersWait says whether a request that is not Alone waits: a new one
// then queues behind it. Alone requests wait for one device to empty and
// are not queued before: the other devices go on taking work meanwhile.
func (p *Pool) othersWait() bool {
	for _, w := range p.waiters {
		if !w.req.Alone {
			return true
		}
	}
	return false
}

// fewestHolders is the slot of cands with the fewest holders now.
func (p *Pool) fewestHolders(cands []*slot) *slot {
	best := cands[0]
	for _, s := range cands[1:] {
		if s.holders+s.aloneWaiting < best.holders+best.aloneWaiting {
			best = s
		}
	}
	return best
}

func (p *Pool) release(s *slot, alone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.holders--
	if alone {
		s.alone = false
	} else if s.limit < p.maxHolders {
		if s.calm++; s.calm >= RecoverAfter {
			s.limit, s.calm = s.limit+1, 0
		}
	}
	// Serve waiters in order; one that cannot be placed yet keeps its turn
	// for its own device but does not block others asking for other devices.
	var keep []*waiter
	for _, w := range p.waiters {
		if t := p.pick(w.cands, w.req.Alone); t != nil {
			if w.req.Alone {
				t.aloneWaiting--
			}
			w.ready <- p.place(t, w.req.Alone)
			continue
		}
		keep = append(keep, w)
	}
	p.waiters = keep
}

// Lease is one job's hold on one device.
type Lease struct {
	pool *Pool
	slot *slot

	mu       sync.Mutex
	held     func() // the exclusive phase held for the whole lease
	released bool
	alone    bool // Request.Alone
	gen      int  // the generation of its device's limit when it was placed
}

// Device is the leased device.
func (l *Lease) Device() Device { return l.slot.dev }

// Target is the leased device's target.
func (l *Lease) Target() target.Name { return l.pool.target }

// MaxHolders is how many leases the lease's pool places on one device at
// once while they fit in its memory: as many jobs may be in flight on this
// device beside this one.
func (l *Lease) MaxHolders() int { return l.pool.maxHolders }

// Limit is how many leases the pool places on the lease's device at once
// now: MaxHolders, or fewer while the device is crowded (Crowded).
func (l *Lease) Limit() int {
	l.pool.mu.Lock()
	defer l.pool.mu.Unlock()
	return l.slot.limit
}

// Crowded says the lease's evaluation ran out of device memory beside the
// others placed on its device (and fit once it had the device alone): the
// device takes a quarter fewer leases at once than the most it held since
// its limit last fell (never fewer than MinHoldersCrowded), until
// RecoverAfter leases end without this, then one more each time, up to
// MaxHolders. The count of jobs per GPU comes from the host's cores
// (HoldersPerGPU), which know nothing of how much device memory each
// problem's processes keep: 24 on one H200 ran out of it over and over.
//
// One crowd makes one cut: a lease placed before the limit last fell
// changes nothing (the evaluations that ran out beside the same
// neighbours would otherwise cut it again and again, each while the
// device drains for the one before, down to the floor: on 4 H200s, 10
// leases at once went to 2 within six seconds). Returns the device's
// limit now. It may be called after Release.
func (l *Lease) Crowded() int {
	p, s := l.pool, l.slot
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.gen != s.gen {
		return s.limit
	}
	s.limit = max(MinHoldersCrowded, min(s.limit, s.peak*3/4))
	s.gen, s.peak, s.calm = s.gen+1, 0, 0 // peak: from the next placement on
	return s.limit
}

// Env pins a child process to the device: the target's visible-devices
// variable (none on the CPU) and EnvDevice.
func (l *Lease) Env() map[string]string {
	env := map[string]string{EnvDevice: strconv.Itoa(l.slot.dev.Index)}
	if v := target.MustGet(l.pool.target).VisibleDevices; v != "" {
		env[v] = l.slot.dev.ID()
	}
	return env
}

// Exclusive waits for the device's exclusive phase and returns its release.
// A lease acquired with Exclusive already holds it: Exclusive then returns
// at once with a no-op release.
func (l *Lease) Exclusive(ctx context.Context) (func(), error) {
	l.mu.Lock()
	held := l.held != nil
	l.mu.Unlock()
	if held {
		return func() {}, nil
	}
	select {
	case l.slot.phase <- struct{}{}:
		l.slot.heldSince.Store(time.Now().UnixNano())
		var once sync.Once
		return func() {
			once.Do(func() {
				l.slot.busyNs.Add(max(0, time.Now().UnixNano()-l.slot.heldSince.Swap(0)))
				<-l.slot.phase
			})
		}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s device %d: %w", l.pool.target, l.slot.dev.Index, ctx.Err())
	}
}

// Release gives the lease back; calling it again does nothing.
func (l *Lease) Release() {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return
	}
	l.released = true
	held := l.held
	l.held = nil
	l.mu.Unlock()
	if held != nil {
		held()
	}
	l.pool.release(l.slot, l.alone)
}

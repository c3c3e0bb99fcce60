package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// JobRunner evaluates one job on one of the worker's devices. The harness
// runs candidate code only inside its sandboxed Python children.
type JobRunner interface {
	Run(ctx context.Context, job Job, dev Device) (*search.Result, error)
}

// Worker is a long-lived pull worker: it registers its devices, claims up
// to Device.Jobs jobs per device (the host's lease pool overlaps their
// compiling and loading with each other's device phase, as the in-process
// service does), keeps the leases alive with heartbeats and reports results.
type Worker struct {
	Coordinator string
	Token       string
	// Name is stable across restarts (the launcher's name for this worker);
	// ID is unique per process (default: Name plus a random suffix).
	Name    string
	ID      string
	Devices []Device
	Runner  JobRunner
	Log     *slog.Logger
	// Drain is how long a cancelled worker keeps finishing its jobs before
	// it releases them (default 30 s; 0 < Drain).
	Drain time.Duration
	// Limit, where set, is how many jobs a device takes at once now, when
	// that is below its Jobs (0: no word): the evaluation service places
	// fewer on a device whose memory was crowded, and a job claimed beyond
	// that would only wait for this device while another could run it.
	Limit func(Device) int

	c      *client
	lease  time.Duration
	mu     sync.Mutex
	held   map[string]*heldJob // by job id
	slotCh chan struct{}
	// occupancy per device index: what each result reports as busy time.
	occ map[int]*occupancy
}

// occupancy measures the time a device had at least one job in flight.
// Jobs on one device overlap, so the sum of their walls would count it
// several times; each finishing job reports the occupied time since the
// last one finished, and the reports add up to the device's busy time.
type occupancy struct {
	active int
	since  time.Time // when the current accounting interval began
}

func (o *occupancy) start(now time.Time) {
	if o.active == 0 {
		o.since = now
	}
	o.active++
}

// finish ends one job and returns the busy time it reports.
func (o *occupancy) finish(now time.Time) time.Duration {
	d := now.Sub(o.since)
	o.since = now
	o.active--
	return d
}

type heldJob struct {
	job    Job
	cancel context.CancelFunc
	lost   bool
}

func (w *Worker) log() *slog.Logger {
	if w.Log == nil {
		return slog.Default()
	}
	return w.Log
}

// Run serves until ctx ends (SIGTERM), then stops claiming, finishes its
// jobs within Drain, releases what is left and deregisters.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.Devices) == 0 {
		return errors.New("worker: no devices to offer")
	}
	if w.Runner == nil {
		return errors.New("worker: no evaluator")
	}
	if w.Name == "" {
		h, _ := os.Hostname()
		w.Name = h
	}
	if w.ID == "" {
		w.ID = w.Name + "-" + randomID("")[:8]
	}
	if w.Drain <= 0 {
		w.Drain = 30 * time.Second
	}
	w.c = newClient(w.Coordinator, w.Token)
	w.held = map[string]*heldJob{}
	w.occ = map[int]*occupancy{}
	slots := 0
	for _, d := range w.Devices {
		slots += d.jobs()
		w.occ[d.Index] = &occupancy{}
	}
	w.slotCh = make(chan struct{}, slots)
	if err := w.register(ctx); err != nil {
		return err
	}
	// Evaluations outlive ctx by the drain period.
	evalCtx, cancelEvals := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEvals()
	var wg sync.WaitGroup
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	go w.heartbeats(hbCtx)

	for ctx.Err() == nil {
		free := w.free()
		if len(free) == 0 {
			select {
			case <-w.slotCh:
			case <-ctx.Done():
			}
			continue
		}
		var resp ClaimResponse
		err := w.c.post(ctx, PathClaim, ClaimRequest{WorkerID: w.ID, Free: free, WaitS: DefaultClaimWait.Seconds()}, &resp)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if isStatus(err, http.StatusNotFound) { // a coordinator that forgot us
				w.register(ctx)
				continue
			}
			if isStatus(err, http.StatusUnauthorized) {
				stopHB()
				return fmt.Errorf("worker: %w (check --token)", err)
			}
			w.log().Warn("claim failed; retrying", "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		for _, j := range resp.Jobs {
			jctx, cancel := context.WithCancel(evalCtx)
			h := &heldJob{job: j, cancel: cancel}
			w.hold(h)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.runJob(jctx, h)
			}()
		}
	}
	// Draining: finish what runs, within Drain.
	w.log().Info("worker draining", "worker", w.Name, "jobs", len(w.heldLeases()))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.Drain):
		w.log().Warn("drain period over: releasing unfinished jobs", "worker", w.Name)
		rel := w.heldLeases()
		cancelEvals()
		<-done
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w.c.post(rctx, PathRelease, ReleaseRequest{WorkerID: w.ID, Jobs: rel, Reason: "drain timeout"}, nil)
		cancel()
	}
	stopHB()
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.c.post(rctx, PathRelease, ReleaseRequest{WorkerID: w.ID, Jobs: w.heldLeases(), Reason: "exit"}, nil)
	w.log().Info("worker stopped", "worker", w.Name)
	return nil
}

// hold records a claimed job. The coordinator may hand back a job this
// worker still runs under an older lease: a worker SIGSTOPped past its
// lease whose requeued job waited in the queue until it resumed and
// claimed again. That older attempt's lease is gone, so it is abandoned
// here, and its end must not drop the new attempt (see runJob).
func (w *Worker) hold(h *heldJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.held[h.job.ID]; old != nil && !old.lost {
		old.lost = true
		old.cancel()
		w.log().Warn("lease lost: abandoning job, claimed again", "job", h.job.ID)
	}
	w.held[h.job.ID] = h
	if o := w.occ[h.job.Device]; o != nil {
		o.start(time.Now())
	}
}

func (w *Worker) register(ctx context.Context) error {
	host, _ := os.Hostname()
	req := RegisterRequest{ID: w.ID, Name: w.Name, Host: host, PID: os.Getpid(), Devices: w.Devices}
	backoff := 200 * time.Millisecond
	for {
		var resp RegisterResponse
		err := w.c.post(ctx, PathRegister, req, &resp)
		if err == nil {
			w.lease = time.Duration(resp.LeaseS * float64(time.Second))
			if w.lease <= 0 {
				w.lease = DefaultLease
			}
			w.log().Info("worker registered", "worker", w.Name, "coordinator", w.Coordinator, "devices", len(w.Devices), "lease", w.lease)
			return nil
		}
		if isStatus(err, http.StatusUnauthorized) || isStatus(err, http.StatusBadRequest) {
			return fmt.Errorf("worker: register: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log().Warn("coordinator not reachable; retrying", "err", err)
		sleepCtx(ctx, backoff)
		backoff = min(backoff*2, 3*time.Second)
	}
}

// free lists the worker's free job slots: each device's index once per job
// it can still take.
func (w *Worker) free() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	running := map[int]int{}
	for _, h := range w.held {
		running[h.job.Device]++
	}
	var out []int
	for _, d := range w.Devices {
		n := d.jobs()
		if w.Limit != nil {
			if l := w.Limit(d); l > 0 {
				n = min(n, l)
			}
		}
		for i := running[d.Index]; i < n; i++ {
			out = append(out, d.Index)
		}
	}
	return out
}

func (w *Worker) heldLeases() []JobLease {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []JobLease
	for _, h := range w.held {
		out = append(out, JobLease{JobID: h.job.ID, LeaseToken: h.job.LeaseToken})
	}
	return out
}

func (w *Worker) heartbeats(ctx context.Context) {
	every := max(w.lease/4, 100*time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		var resp HeartbeatResponse
		hctx, cancel := context.WithTimeout(ctx, max(w.lease/2, 500*time.Millisecond))
		sent := w.heldLeases()
		err := w.c.post(hctx, PathHeartbeat, HeartbeatRequest{WorkerID: w.ID, Jobs: sent}, &resp)
		cancel()
		if err != nil {
			if isStatus(err, http.StatusNotFound) {
				w.register(ctx)
			}
			continue // the coordinator may be restarting: keep evaluating
		}
		if len(resp.Lost) > 0 {
			w.abandon(sent, resp.Lost)
		}
	}
}

// abandon cancels the jobs whose leases the coordinator no longer renews
// (lost, of those sent). Only the leases sent are lost: the job may have
// been claimed again under a new lease while the heartbeat was out.
func (w *Worker) abandon(sent []JobLease, lost []string) {
	token := map[string]string{}
	for _, l := range sent {
		token[l.JobID] = l.LeaseToken
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range lost {
		if h := w.held[id]; h != nil && !h.lost && h.job.LeaseToken == token[id] {
			h.lost = true
			h.cancel()
			w.log().Warn("lease lost: abandoning job", "job", id)
		}
	}
}

func (w *Worker) runJob(ctx context.Context, h *heldJob) {
	defer func() {
		w.mu.Lock()
		if w.held[h.job.ID] == h { // not a newer attempt's (see hold)
			delete(w.held, h.job.ID)
		}
		w.mu.Unlock()
		h.cancel()
		select {
		case w.slotCh <- struct{}{}:
		default:
		}
	}()
	var dev Device
	for _, d := range w.Devices {
		if d.Index == h.job.Device {
			dev = d
		}
	}
	res, err := w.Runner.Run(ctx, h.job, dev)
	w.mu.Lock()
	lost := h.lost
	var busy float64
	if o := w.occ[h.job.Device]; o != nil {
		busy = o.finish(time.Now()).Seconds()
	}
	w.mu.Unlock()
	if ctx.Err() != nil || lost {
		return // cancelled (drain timeout releases it) or lease lost
	}
	req := ResultRequest{WorkerID: w.ID, JobID: h.job.ID, LeaseToken: h.job.LeaseToken, Result: res, BusyS: busy}
	if err != nil {
		req.Result, req.Error = nil, err.Error()
		w.log().Warn("job not evaluated", "job", h.job.ID, "err", err)
	}
	redactResult(&req, w.Token)
	w.report(ctx, req)
}

// report posts a result until the coordinator answers (it may be
// restarting), for at most ten minutes, or until ctx ends (a drain that ran
// out of time releases the job instead).
func (w *Worker) report(ctx context.Context, req ResultRequest) {
	deadline := time.Now().Add(10 * time.Minute)
	backoff := 200 * time.Millisecond
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var resp ResultResponse
		err := w.c.post(ctx, PathResult, req, &resp)
		cancel()
		if err == nil {
			if !resp.Accepted {
				w.log().Info("result not recorded", "job", req.JobID, "why", resp.Why)
			}
			return
		}
		var se *statusError
		if errors.As(err, &se) && se.code < 500 {
			w.log().Warn("result refused", "job", req.JobID, "err", err)
			return
		}
		sleepCtx(ctx, backoff)
		backoff = min(backoff*2, 2*time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

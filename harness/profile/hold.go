package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The device is held only while the profiled process runs kernels. Its
// driver marks the moments in a folder both sides see (driver.py
// hold_device): "ready" once its set-up is done, then it waits for "go",
// written once the device is held; "done" once its kernels have run. The
// start of Python, the candidate's import and its builds never hold the
// device other evaluations wait for. On a 16-job sweep of an H200 host a
// whole profile under the gate held it about 65 s, most of it rebuilding
// the candidate's load_inline extension under Nsight Compute; its kernels
// alone held it 1.6 s.

// HoldFunc takes the device; release gives it back.
type HoldFunc func(context.Context) (release func(), err error)

// holdPoll is how often the marks are looked for: far below the seconds a
// profiled process takes, far above what a stat costs.
const holdPoll = 10 * time.Millisecond

// The marks, in the order they are written.
const (
	markReady = "ready"
	markGo    = "go"
	markDone  = "done"
)

// runHolding runs name with args and holds the device with hold from the
// driver's "ready" until its "done" or its exit, whichever comes first. A
// hold that fails ends the process and is the error.
func runHolding(ctx context.Context, gate string, hold HoldFunc, env []string, name string, args ...string) (procResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		res procResult
		err error
	}
	exited := make(chan outcome, 1)
	go func() {
		res, err := run(ctx, env, name, args...)
		exited <- outcome{res, err}
	}()
	h := &holder{gate: gate, hold: hold}
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		select {
		case o := <-exited:
			return h.end(o.res), o.err
		case <-tick.C:
		}
		if err := h.step(ctx); err != nil {
			cancel()
			o := <-exited
			return h.end(o.res), err
		}
	}
}

// holder follows one process's marks.
type holder struct {
	gate    string
	hold    HoldFunc
	release func()
	since   time.Time     // when it was held (zero: not yet; a process is held at most once)
	heldFor time.Duration // how long it was held
}

// step takes the device at "ready" and gives it back at "done".
func (h *holder) step(ctx context.Context) error {
	switch {
	case h.since.IsZero() && h.marked(markReady):
		release, err := h.hold(ctx)
		if err != nil {
			return fmt.Errorf("profile: holding the device: %w", err)
		}
		h.release, h.since = release, time.Now()
		if err := os.WriteFile(filepath.Join(h.gate, markGo), nil, 0o644); err != nil {
			return fmt.Errorf("profile: device hold handshake: %w", err)
		}
	case h.release != nil && h.marked(markDone):
		h.giveBack()
	}
	return nil
}

func (h *holder) marked(name string) bool { return exists(filepath.Join(h.gate, name)) }

// end gives the device back once the process has exited and says in res
// how long it was held.
func (h *holder) end(res procResult) procResult {
	h.giveBack()
	res.held = h.heldFor
	return res
}

func (h *holder) giveBack() {
	if h.release != nil {
		h.release()
		h.release, h.heldFor = nil, time.Since(h.since)
	}
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A driver's claim on a run: refreshed every leaseBeat, given up by a
// clean exit, taken over after leaseStale without a beat (another host) or
// at once when the recorded driver is a dead process of this host.
const (
	leaseBeat  = 5 * time.Second
	leaseStale = 30 * time.Second
)

// driverID names this process: host:pid:start-time.
func driverID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), time.Now().UnixNano())
}

// driverAlive says whether a recorded driver may still be running: a
// process of this host is checked with kill(pid, 0); one elsewhere is
// presumed alive until its heartbeat goes stale.
func driverAlive(driver string) bool {
	parts := strings.Split(driver, ":")
	if len(parts) != 3 {
		return true
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return true
	}
	if pid == os.Getpid() {
		return true // an earlier Drive of this very process: stale only by time
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// holdLease claims the run and keeps the claim fresh until the returned
// release is called.
func (e *Engine) holdLease(ctx context.Context, runID string) (release func(), err error) {
	me := driverID()
	if err := e.Store.AcquireRun(ctx, runID, me, leaseStale, driverAlive); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(leaseBeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				e.Store.HeartbeatRun(context.WithoutCancel(ctx), runID, me)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		e.Store.ReleaseRun(context.WithoutCancel(ctx), runID, me)
	}, nil
}

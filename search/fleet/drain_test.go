package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// slowRunner takes d per job (or until cancelled); it stands in for the
// harness so the test controls how long an evaluation outlives SIGTERM.
type slowRunner struct {
	d       time.Duration
	started chan string
}

func (s *slowRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	s.started <- job.ID
	select {
	case <-time.After(s.d):
		return &search.Result{Verdict: search.VerdictPass, Correct: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SIGTERM (the worker's context ending) stops claiming, lets a running
// evaluation finish within the drain period and reports it; one that
// would outlive the drain period is released, not lost, and goes to the
// next worker without counting as a lost lease.
func TestWorkerDrainsOnSIGTERM(t *testing.T) {
	for _, tc := range []struct {
		name     string
		job      time.Duration
		drain    time.Duration
		finished bool
	}{
		{"finishes within the drain period", 300 * time.Millisecond, 5 * time.Second, true},
		{"released after the drain period", 10 * time.Second, 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			q := newTestQueue(t, nil)
			coord := listenTest(t, q)
			id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code", 0, false)
			r := &slowRunner{d: tc.job, started: make(chan string, 4)}
			w := &Worker{Coordinator: coord.URL(), Token: "tk", Name: "w", Devices: []Device{{Index: 0, Target: "cpu"}}, Runner: r, Drain: tc.drain}
			wctx, term := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			var runErr error
			go func() { defer wg.Done(); runErr = w.Run(wctx) }()
			select {
			case <-r.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the job never started")
			}
			term() // SIGTERM
			wg.Wait()
			if runErr != nil {
				t.Fatalf("worker: %v", runErr)
			}
			j, _ := q.Job(ctx, id)
			if tc.finished {
				if j.State != JobDone || j.Completions != 1 {
					t.Fatalf("job after a drained exit: %+v", j)
				}
			} else if j.State != JobQueued || j.Lost != 0 {
				t.Fatalf("job after the drain period: %+v (want queued, no lost lease)", j)
			}
			s, _ := Snapshot(ctx, q)
			if len(s.Workers) != 1 || s.Workers[0].State != "gone" {
				t.Errorf("the worker did not deregister: %+v", s.Workers)
			}
		})
	}
}

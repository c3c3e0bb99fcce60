package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// staleRunner finishes a job's first attempt only when released, whatever
// its context says (a SIGSTOPped worker's child finished while it was
// stopped), and takes its later attempts d each.
type staleRunner struct {
	d       time.Duration
	started chan int // the attempt
	release chan struct{}
}

func (r *staleRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	r.started <- job.Attempt
	if job.Attempt == 1 {
		<-r.release
		return &search.Result{Verdict: search.VerdictPass, Correct: true}, nil
	}
	select {
	case <-time.After(r.d):
		return &search.Result{Verdict: search.VerdictPass, Correct: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A worker stopped past its lease resumes while its requeued job still
// waits in the queue, and claims it again: the second attempt runs beside
// the first, stale one. The stale attempt's end must not take the new
// lease out of the worker's heartbeats (it did: the job lost a second
// lease and was recorded as a crash, three times in a fault trial beside
// another make test).
func TestWorkerReclaimsItsRequeuedJob(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	q.Lease = time.Second
	coord := listenTest(t, q)
	id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code", 0, false)
	r := &staleRunner{d: 3 * q.Lease, started: make(chan int, 4), release: make(chan struct{})}
	w := &Worker{Coordinator: coord.URL(), Token: "tk", Name: "w", Devices: []Device{{Index: 0, Target: "cpu", Jobs: 2}}, Runner: r, Drain: time.Second}
	wctx, term := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { term(); <-done }()
	waitAttempt(t, r.started, 1)
	// What Reap does to a stopped worker's expired lease, at once, so no
	// heartbeat can renew it in between.
	if _, err := q.db.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'queued', lost = lost + 1, blame = blame + 1, worker_id = NULL WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	q.signal()
	waitAttempt(t, r.started, 2)
	close(r.release)
	waitFor(t, 10*r.d, "the job to finish", func() bool {
		j, err := q.Job(ctx, id)
		return err == nil && (j.State == JobDone || j.State == JobFailed)
	})
	j, _ := q.Job(ctx, id)
	if j.Result == nil || j.Result.Verdict != search.VerdictPass || j.Claims != 2 || j.Lost != 1 || j.DoneBy != w.ID {
		t.Fatalf("job %+v (%s); want passed by the worker's second attempt, one lease lost", j, j.Error)
	}
}

func waitAttempt(t *testing.T, started chan int, want int) {
	t.Helper()
	select {
	case a := <-started:
		if a != want {
			t.Fatalf("attempt %d started, want %d", a, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("attempt %d never started", want)
	}
}

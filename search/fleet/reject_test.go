package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// A rejected result changes nothing of the worker it names (busy_s,
// last_seen, jobs_done) and writes no event: an unknown job, a wrong lease
// token, a lease another worker holds, a job already done.
func TestRejectedResultChangesNothing(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	c := fakeClock(q, time.Minute)
	register(t, q, "a", Device{Index: 0, Target: "cpu"})
	register(t, q, "b", Device{Index: 0, Target: "cpu"})
	held, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code-1", 0, false)
	done, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code-2", 0, false)
	ja, _ := q.Claim(ctx, "a", []int{0})
	jb, _ := q.Claim(ctx, "b", []int{0})
	if len(ja) != 1 || len(jb) != 1 {
		t.Fatalf("claims %+v %+v", ja, jb)
	}
	lease := map[string]string{ja[0].ID: ja[0].LeaseToken, jb[0].ID: jb[0].LeaseToken}
	owner := map[string]string{ja[0].ID: "a", jb[0].ID: "b"}
	// b finishes its job; a keeps the other.
	doneID, heldID := jb[0].ID, ja[0].ID
	if doneID != done && doneID != held {
		t.Fatal("unexpected job ids")
	}
	if r, err := q.Complete(ctx, ResultRequest{WorkerID: owner[doneID], JobID: doneID, LeaseToken: lease[doneID], Result: &search.Result{Verdict: "pass"}, BusyS: 1}); err != nil || !r.Accepted {
		t.Fatalf("the holder's result: %+v %v", r, err)
	}
	c.add(10 * time.Second)
	cases := []struct {
		name string
		req  ResultRequest
	}{
		{"unknown job", ResultRequest{WorkerID: "a", JobID: "no-such-job", LeaseToken: "x"}},
		{"wrong token", ResultRequest{WorkerID: "a", JobID: heldID, LeaseToken: "forged"}},
		{"held by another", ResultRequest{WorkerID: "b", JobID: heldID, LeaseToken: lease[heldID]}},
		{"already done", ResultRequest{WorkerID: "a", JobID: doneID, LeaseToken: lease[doneID]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := workerRows(t, q)
			events := countEvents(t, q)
			tc.req.BusyS = 1000
			tc.req.Result = &search.Result{Verdict: "pass"}
			r, err := q.Complete(ctx, tc.req)
			if err != nil || r.Accepted {
				t.Fatalf("accepted: %+v %v", r, err)
			}
			if after := workerRows(t, q); after != before {
				t.Fatalf("worker rows changed:\n%s\n%s", before, after)
			}
			if n := countEvents(t, q); n != events {
				t.Fatalf("%d events written", n-events)
			}
		})
	}
	if j, _ := q.Job(ctx, heldID); j.State != JobClaimed || j.Result != nil {
		t.Fatalf("the held job changed: %+v", j)
	}
}

func workerRows(t *testing.T, q *Queue) string {
	t.Helper()
	rows, err := q.db.Query(`SELECT id, last_seen, busy_s, jobs_done, state FROM fleet_workers ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	s := ""
	for rows.Next() {
		var id, state string
		var seen, busy float64
		var done int
		if err := rows.Scan(&id, &seen, &busy, &done, &state); err != nil {
			t.Fatal(err)
		}
		s += id + " " + state + " " + time.Unix(int64(seen), 0).String() + " " + string(rune('0'+done)) + " " + time.Duration(busy*1e9).String() + "\n"
	}
	return s
}

func countEvents(t *testing.T, q *Queue) int {
	t.Helper()
	var n int
	if err := q.db.QueryRow(`SELECT count(*) FROM fleet_job_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A job is its contents: the same problem name with another reference, or
// code that differs only in blank lines, is another job; the same contents
// are the same job.
func TestJobKeyIsContent(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	enq := func(ref, code string) string {
		id, err := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, ref, code, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := enq("ref-1", "code")
	if enq("ref-1", "code") != a {
		t.Fatal("the same contents made two jobs")
	}
	if enq("ref-2", "code") == a {
		t.Fatal("another reference under the same problem name was answered by the old job")
	}
	if enq("ref-1", "code\n\n") == a {
		t.Fatal("other code was answered by the old job")
	}
}

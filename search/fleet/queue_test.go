package fleet

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func openTestDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "fleet.db")
	}
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newTestQueue(t *testing.T, db *sql.DB) *Queue {
	t.Helper()
	if db == nil {
		db = openTestDB(t, "")
	}
	q, err := NewQueue(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// listenTest serves q on a loopback port with token "tk" until the test
// ends; claims long-poll for at most a second.
func listenTest(t *testing.T, q *Queue) *Coordinator {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	c := &Coordinator{Queue: q, Token: "tk", ClaimWait: time.Second}
	if err := c.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	return c
}

// clock is a settable time for lease tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeClock gives q a clock the test moves by hand, with leases of lease
// (0 keeps the queue's).
func fakeClock(q *Queue, lease time.Duration) *clock {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	q.now = c.now
	if lease > 0 {
		q.Lease = lease
	}
	return c
}

var testProblem = search.Problem{Name: "t/p", Target: "cpu", ReferencePath: "/nonexistent"}

func register(t *testing.T, q *Queue, id string, devs ...Device) {
	t.Helper()
	if err := q.Register(context.Background(), RegisterRequest{ID: id, Name: id, Host: "h", Devices: devs}); err != nil {
		t.Fatal(err)
	}
}

func TestKindMatches(t *testing.T) {
	h100 := Device{Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100 80GB HBM3"}
	mi300 := Device{Target: "amd", Arch: "gfx942", Name: "AMD Instinct MI300X"}
	cpu := Device{Target: "cpu", Arch: "amd64"}
	cases := []struct {
		kind Kind
		dev  Device
		want bool
	}{
		{Kind{Target: "nvidia"}, h100, true},
		{Kind{Target: "nvidia", Arch: "sm_90"}, h100, true},
		{Kind{Target: "nvidia", Arch: "sm_100"}, h100, false},
		{Kind{Target: "nvidia", Model: "h100"}, h100, true},
		{Kind{Target: "nvidia", Model: "h200"}, h100, false},
		{Kind{Target: "amd", Arch: "gfx942"}, mi300, true},
		{Kind{Target: "amd", Model: "mi300x"}, mi300, true},
		{Kind{Target: "nvidia"}, mi300, false},
		{Kind{Target: "cpu"}, cpu, true},
		{Kind{Target: "cpu"}, h100, false},
	}
	for _, c := range cases {
		if got := c.kind.Matches(c.dev); got != c.want {
			t.Errorf("%s matches %s/%s = %v, want %v", c.kind, c.dev.Target, c.dev.Name, got, c.want)
		}
	}
}

func TestParseKinds(t *testing.T) {
	cases := []struct {
		in   string
		want []Kind
		bad  bool
	}{
		{in: "nvidia:sm_90,amd:gfx942", want: []Kind{{Target: "nvidia", Arch: "sm_90"}, {Target: "amd", Arch: "gfx942"}}},
		{in: "h100,h200", want: []Kind{{Target: "nvidia", Model: "h100"}, {Target: "nvidia", Model: "h200"}}},
		{in: "cpu", want: []Kind{{Target: "cpu"}}},
		{in: "MI300X, sm_90", want: []Kind{{Target: "amd", Model: "mi300x"}, {Target: "nvidia", Arch: "sm_90"}}},
		{in: "tpu:v5", bad: true},
		{in: " , ", bad: true},
	}
	for _, c := range cases {
		got, err := ParseKinds(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseKinds(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestClaimMatchesTargetAndArch(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	register(t, q, "nv", Device{Index: 0, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100"}, Device{Index: 1, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100"})
	register(t, q, "amd", Device{Index: 0, Target: "amd", Arch: "gfx942", Name: "MI300X"})
	idA, _ := q.Enqueue(ctx, testProblem, Kind{Target: "amd", Arch: "gfx942"}, "ref", "code-a", 0, false)
	idN, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia", Arch: "sm_90"}, "ref", "code-n", 0, false)
	idN2, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia", Model: "h100"}, "ref", "code-n2", 0, false)
	again, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia", Arch: "sm_90"}, "ref", "code-n", 0, false)
	if again != idN {
		t.Fatalf("the same code on the same kind made a second job: %s vs %s", again, idN)
	}
	jobs, err := q.Claim(ctx, "nv", []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != idN || jobs[1].ID != idN2 || jobs[0].Device == jobs[1].Device {
		t.Fatalf("nvidia worker claimed %+v, want %s and %s on distinct devices", jobs, idN, idN2)
	}
	if more, _ := q.Claim(ctx, "nv", []int{0}); len(more) != 0 {
		t.Fatalf("nvidia worker claimed an AMD job: %+v", more)
	}
	jobs, _ = q.Claim(ctx, "amd", []int{0})
	if len(jobs) != 1 || jobs[0].ID != idA {
		t.Fatalf("amd worker claimed %+v, want %s", jobs, idA)
	}
	if _, err := q.Claim(ctx, "nobody", []int{0}); err == nil {
		t.Fatal("an unregistered worker could claim")
	}
}

// Many workers claiming at once: every job goes to exactly one.
func TestClaimIsAtomic(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	q := newTestQueue(t, openTestDB(t, filepath.Join(dir, "f.db")))
	const jobs, workers = 60, 6
	for i := 0; i < jobs; i++ {
		q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", fmt.Sprintf("code %d", i), 0, false)
	}
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		// Each worker has its own connection pool, as separate processes would.
		wq := newTestQueue(t, openTestDB(t, filepath.Join(dir, "f.db")))
		id := fmt.Sprintf("w%d", w)
		register(t, wq, id, Device{Index: 0, Target: "cpu"}, Device{Index: 1, Target: "cpu"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				js, err := wq.Claim(ctx, id, []int{0, 1})
				if err != nil {
					t.Error(err)
					return
				}
				if len(js) == 0 {
					return
				}
				mu.Lock()
				for _, j := range js {
					if prev, ok := got[j.ID]; ok {
						t.Errorf("job %s claimed by %s and %s", j.ID, prev, id)
					}
					got[j.ID] = id
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != jobs {
		t.Fatalf("%d of %d jobs claimed", len(got), jobs)
	}
}

func TestLeaseExpiryRequeuesThenCrashes(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	c := fakeClock(q, 2*time.Second)
	register(t, q, "a", Device{Index: 0, Target: "cpu"})
	register(t, q, "b", Device{Index: 0, Target: "cpu"})
	id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code", 0, false)

	ja, _ := q.Claim(ctx, "a", []int{0})
	c.add(1500 * time.Millisecond)
	if lost, _ := q.Heartbeat(ctx, "a", []JobLease{{ja[0].ID, ja[0].LeaseToken}}); len(lost) != 0 {
		t.Fatalf("a live lease reported lost: %v", lost)
	}
	c.add(1500 * time.Millisecond)
	if n, _ := q.Reap(ctx); n != 0 {
		t.Fatal("a heartbeated lease expired")
	}
	c.add(3 * time.Second) // a stops heartbeating: killed or stopped
	if n, _ := q.Reap(ctx); n != 1 {
		t.Fatalf("reaped %d, want 1", n)
	}
	if j, _ := q.Job(ctx, id); j.State != JobQueued || j.Lost != 1 {
		t.Fatalf("after one lost lease: %+v", j)
	}
	// a comes back: its heartbeat learns it lost the job.
	if lost, _ := q.Heartbeat(ctx, "a", []JobLease{{ja[0].ID, ja[0].LeaseToken}}); len(lost) != 1 {
		t.Fatalf("a did not learn it lost the job: %v", lost)
	}
	// A worker not heard from lately gets nothing (its poll may outlive it).
	if jb, _ := q.Claim(ctx, "b", []int{0}); len(jb) != 0 {
		t.Fatalf("a silent worker was handed %+v", jb)
	}
	q.Touch(ctx, "b")
	jb, _ := q.Claim(ctx, "b", []int{0})
	if len(jb) != 1 || jb[0].Attempt != 2 {
		t.Fatalf("b claimed %+v", jb)
	}
	// a's late result with its old lease is not recorded.
	if r, _ := q.Complete(ctx, ResultRequest{WorkerID: "a", JobID: id, LeaseToken: ja[0].LeaseToken, Result: &search.Result{Verdict: "pass"}}); r.Accepted {
		t.Fatal("a result under a lost lease was recorded")
	}
	c.add(5 * time.Second) // b dies too: the job has killed two workers
	q.Reap(ctx)
	j, _ := q.Job(ctx, id)
	if j.State != JobDone || j.Result == nil || j.Result.Verdict != search.VerdictCrash || j.Completions != 1 {
		t.Fatalf("a job that lost two leases: %+v, want done as crash", j)
	}
	if r, _ := q.Complete(ctx, ResultRequest{WorkerID: "b", JobID: id, LeaseToken: jb[0].LeaseToken, Result: &search.Result{Verdict: "pass"}}); r.Accepted {
		t.Fatal("a late duplicate after the crash verdict was recorded")
	}
	if j, _ := q.Job(ctx, id); j.Completions != 1 || j.Late != 2 {
		t.Fatalf("completions %d, late %d; want 1 and 2", j.Completions, j.Late)
	}
	s, err := Snapshot(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if s.LeasesLost != 2 || s.Crashed != 1 || s.Requeued != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestResultsIdempotentAndReleases(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	register(t, q, "a", Device{Index: 0, Target: "cpu"})
	id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code", 0, false)
	j, _ := q.Claim(ctx, "a", []int{0})
	if err := q.Release(ctx, "a", []JobLease{{id, j[0].LeaseToken}}, "drain"); err != nil {
		t.Fatal(err)
	}
	if r, _ := q.Job(ctx, id); r.State != JobQueued || r.Lost != 0 {
		t.Fatalf("released job: %+v", r)
	}
	j, _ = q.Claim(ctx, "a", []int{0})
	req := ResultRequest{WorkerID: "a", JobID: id, LeaseToken: j[0].LeaseToken, Result: &search.Result{Verdict: "pass", TimeS: 1}}
	for i := 0; i < 3; i++ {
		r, err := q.Complete(ctx, req)
		if err != nil || r.Accepted != (i == 0) {
			t.Fatalf("report %d: %+v %v", i, r, err)
		}
	}
	if r, _ := q.Job(ctx, id); r.Completions != 1 || r.Late != 2 || r.Result.TimeS != 1 {
		t.Fatalf("after three reports: %+v", r)
	}
	// A worker that cannot evaluate puts the job back, then fails it.
	id2, _ := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code 2", 0, false)
	for i := 0; i < q.MaxErrors; i++ {
		j, _ := q.Claim(ctx, "a", []int{0})
		q.Complete(ctx, ResultRequest{WorkerID: "a", JobID: id2, LeaseToken: j[0].LeaseToken, Error: "no python"})
	}
	if r, _ := q.Job(ctx, id2); r.State != JobFailed || r.Error != "no python" {
		t.Fatalf("after %d worker errors: %+v", q.MaxErrors, r)
	}
}

// A restarted coordinator (a new Queue over the same file) keeps every
// job and lease, and gives live leases a grace period.
func TestQueueSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	db1, _ := store.Open(path)
	q1, _ := NewQueue(ctx, db1)
	c := fakeClock(q1, 0)
	register(t, q1, "a", Device{Index: 0, Target: "cpu"})
	id, _ := q1.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", "code", 0, false)
	j, _ := q1.Claim(ctx, "a", []int{0})
	db1.Close()

	c.add(time.Hour) // down far longer than a lease
	db2 := openTestDB(t, path)
	q2, err := NewQueue(ctx, db2)
	if err != nil {
		t.Fatal(err)
	}
	q2.now = c.now
	if err := q2.Grace(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := q2.Reap(ctx); n != 0 {
		t.Fatal("a restart expired the leases of workers that kept working")
	}
	if r, _ := q2.Complete(ctx, ResultRequest{WorkerID: "a", JobID: id, LeaseToken: j[0].LeaseToken, Result: &search.Result{Verdict: "pass"}}); !r.Accepted {
		t.Fatalf("the result after a restart: %+v", r)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func TestShareDevices(t *testing.T) {
	gpus := []Device{{Index: 0, Target: "nvidia"}, {Index: 1, Target: "nvidia"}, {Index: 2, Target: "nvidia"}, {Index: 3, Target: "nvidia"}}
	cases := []struct {
		share string
		want  []int
		bad   bool
	}{
		{"", []int{0, 1, 2, 3}, false},
		{"0/2", []int{0, 2}, false},
		{"1/2", []int{1, 3}, false},
		{"3/4", []int{3}, false},
		{"0/5", []int{0}, false},
		{"4/5", nil, true}, // empty share
		{"2/2", nil, true},
		{"x", nil, true},
	}
	for _, c := range cases {
		got, err := ShareDevices(gpus, c.share)
		if c.bad != (err != nil) {
			t.Errorf("share %q: err %v", c.share, err)
			continue
		}
		var idx []int
		for _, d := range got {
			idx = append(idx, d.Index)
		}
		if !c.bad && fmt.Sprint(idx) != fmt.Sprint(c.want) {
			t.Errorf("share %q: %v, want %v", c.share, idx, c.want)
		}
	}
	cpu := []Device{{Index: 0, Target: "cpu"}, {Index: 1, Target: "cpu"}}
	if got, _ := ShareDevices(cpu, "1/3"); len(got) != 2 {
		t.Errorf("CPU slots were split: %v", got)
	}
}

// A worker's death is shared among the jobs it held: evaluations that only
// kept a dying worker company are retried; one lost twice alone, or lost
// MaxLost+lostCapExtra times in any company, is a crash.
func TestLeaseBlameIsShared(t *testing.T) {
	ctx := context.Background()
	q := newTestQueue(t, nil)
	c := fakeClock(q, 2*time.Second)
	gpu := Device{Index: 0, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100", Jobs: 3}
	var ids []string
	for i := 0; i < 3; i++ {
		id, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", fmt.Sprintf("code %d", i), 0, false)
		ids = append(ids, id)
	}
	// die: worker w claims what it can, falls silent, and its leases expire.
	die := func(w string, dev Device) []Job {
		t.Helper()
		register(t, q, w, dev)
		var free []int
		for i := 0; i < dev.jobs(); i++ {
			free = append(free, dev.Index)
		}
		js, err := q.Claim(ctx, w, free)
		if err != nil {
			t.Fatal(err)
		}
		c.add(3 * time.Second)
		q.Reap(ctx)
		return js
	}
	state := func(id string) (JobState, string) {
		j, _ := q.Job(ctx, id)
		v := ""
		if j.Result != nil {
			v = j.Result.Verdict
		}
		return j.State, v
	}
	for round, w := range []string{"a", "b", "c", "d"} {
		if js := die(w, gpu); len(js) != 3 {
			t.Fatalf("round %d: claimed %d jobs, want 3", round, len(js))
		}
		// Four deaths in company of three: 4/3 of a worker each.
		for _, id := range ids {
			if st, _ := state(id); st != JobQueued {
				t.Fatalf("round %d: job %s is %s after sharing a dying worker with two others", round, id, st)
			}
		}
	}
	// The fifth loss reaches MaxLost+lostCapExtra: crash whatever the share.
	die("e", gpu)
	for _, id := range ids {
		if st, v := state(id); st != JobDone || v != search.VerdictCrash {
			t.Fatalf("job %s lost 5 leases in company and is %s %q, want done as crash", id, st, v)
		}
	}

	// Alone twice: a crash, as before jobs shared workers.
	solo, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", "solo", 0, false)
	one := gpu
	one.Jobs = 1
	die("f", one)
	if st, _ := state(solo); st != JobQueued {
		t.Fatalf("after one lone loss the job is %s", st)
	}
	die("g", one)
	if st, v := state(solo); st != JobDone || v != search.VerdictCrash {
		t.Fatalf("after two lone losses the job is %s %q, want a crash", st, v)
	}

	// Leases of one death that expire in two reaps share it all the same.
	x, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", "x", 0, false)
	register(t, q, "h", gpu)
	q.Claim(ctx, "h", []int{0})
	c.add(time.Second)
	q.Touch(ctx, "h")
	y, _ := q.Enqueue(ctx, testProblem, Kind{Target: "nvidia"}, "ref", "y", 0, false)
	q.Claim(ctx, "h", []int{0}) // expires a second after x
	c.add(1500 * time.Millisecond)
	if n, _ := q.Reap(ctx); n != 1 {
		t.Fatalf("reaped %d, want x alone", n)
	}
	c.add(time.Second)
	if n, _ := q.Reap(ctx); n != 1 {
		t.Fatalf("reaped %d, want y", n)
	}
	var bx, by float64
	q.db.QueryRow(`SELECT blame FROM fleet_jobs WHERE id = ?`, x).Scan(&bx)
	q.db.QueryRow(`SELECT blame FROM fleet_jobs WHERE id = ?`, y).Scan(&by)
	if bx != 0.5 || by != 0.5 {
		t.Fatalf("blame %.2f and %.2f for the two jobs of one death, want 0.5 each", bx, by)
	}
}

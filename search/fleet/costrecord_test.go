package fleet

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
)

// workerResult is what a worker's HarnessRunner reports for an evaluation
// that built for build+load seconds and held the device for device: the
// harness's own result whole in Raw (as harnesseval's adapter converts
// it), its stage seconds named as the harness names them.
func workerResult(t *testing.T, build, load, device float64, edit func(*harness.EvalResult)) *search.Result {
	t.Helper()
	hr := harness.EvalResult{Verdict: "pass", Correct: true, Target: "cpu", Device: "cpu", DeviceIndex: -1,
		Checks: []harness.Check{{Name: "correctness", Passed: true}},
		StageS: map[string]float64{
			harness.StagePrepareBuild:          build,
			"load_candidate":                   load,
			"load_candidate_cpu":               2 * load,
			"correctness":                      0.4,
			"timing":                           device - 0.5,
			harness.StageDeviceHeld:            device,
			harness.StageHeldPrefix + "timing": device - 0.5,
		},
		Warnings: []string{}, WallS: build + load + device + 1.5, MeasuredAt: "2026-01-02T03:04:05Z", HarnessVersion: harness.HarnessVersion()}
	if edit != nil {
		edit(&hr)
	}
	raw, err := json.Marshal(&hr)
	if err != nil {
		t.Fatal(err)
	}
	return &search.Result{Verdict: hr.Verdict, Correct: hr.Correct, Device: hr.Device, WallS: hr.WallS, Cached: hr.Cached, Raw: raw}
}

// costFixture is a coordinator on a real SQLite file with eval_cost
// migrated, serving a registered CPU worker "w" of one job slot.
type costFixture struct {
	t  *testing.T
	db *sql.DB
	q  *Queue
	cl *client
}

func newCostFixture(t *testing.T) *costFixture {
	db := openTestDB(t, "")
	withEvalCost(t, db)
	return newCostFixtureOn(t, db)
}

// newCostFixtureOn is the fixture on db as it is (eval_cost or not).
func newCostFixtureOn(t *testing.T, db *sql.DB) *costFixture {
	q := newTestQueue(t, db)
	fakeClock(q, 0)
	co := listenTest(t, q)
	register(t, q, "w", Device{Index: 0, Target: "cpu", Jobs: 1})
	return &costFixture{t: t, db: db, q: q, cl: newClient("http://"+co.Addr(), "tk")}
}

// report has the worker claim code, the only job queued (on p, against
// "ref"), and send res (nil: a worker error) through the coordinator's
// API, under its lease or, where token is not "", that token.
func (f *costFixture) report(p search.Problem, code string, res *search.Result, token string) (ResultResponse, Job) {
	t, ctx := f.t, context.Background()
	t.Helper()
	if _, err := f.q.Enqueue(ctx, p, Kind{Target: "cpu"}, "ref", code, 0, false); err != nil {
		t.Fatal(err)
	}
	jobs, err := f.q.Claim(ctx, "w", []int{0})
	if err != nil || len(jobs) != 1 || jobs[0].Code != code {
		t.Fatalf("claim %q: %+v %v", code, jobs, err)
	}
	req := ResultRequest{WorkerID: "w", JobID: jobs[0].ID, LeaseToken: jobs[0].LeaseToken, Result: res, BusyS: 1}
	if res == nil {
		req.Error = "no python"
	}
	if token != "" {
		req.LeaseToken = token
	}
	var resp ResultResponse
	if err := f.cl.post(ctx, PathResult, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp, jobs[0]
}

func (f *costFixture) stored(code, target string) (harness.Cost, bool) {
	return harness.LookupCost(context.Background(), f.db, "ref", code, target)
}

var firstProblem = search.Problem{Name: "t/first", Target: "cpu", ReferencePath: "/nonexistent"}

// The coordinator keeps the cost of each result it accepts from a worker
// (workers evaluate without a database) in the harness's eval_cost, under
// the job's reference, code and target, as harness.CostOf reads it from
// the result's stage seconds: a later claim of the same programs on that
// target starts the costliest first.
func TestCompleteRecordsCost(t *testing.T) {
	ctx := context.Background()
	f := newCostFixture(t)
	slow := workerResult(t, 30, 5, 20, nil)
	r, job := f.report(firstProblem, "slow code", slow, "")
	if !r.Accepted {
		t.Fatalf("result refused: %s", r.Why)
	}
	var hr harness.EvalResult
	if err := json.Unmarshal(slow.Raw, &hr); err != nil {
		t.Fatal(err)
	}
	want, _ := harness.CostOf(&hr)
	if got, ok := f.stored("slow code", "cpu"); !ok || got != want || got.BuildS != 35 || got.DeviceS != 20 {
		t.Fatalf("stored %+v, %v; want %+v (build 35 s, device 20 s)", got, ok, want)
	}
	// A late duplicate with other seconds changes nothing.
	var dup ResultResponse
	if err := f.cl.post(ctx, PathResult, ResultRequest{WorkerID: "w", JobID: job.ID, LeaseToken: job.LeaseToken, Result: workerResult(t, 1, 1, 1, nil)}, &dup); err != nil || dup.Accepted {
		t.Fatalf("late duplicate: %+v %v", dup, err)
	}
	if got, _ := f.stored("slow code", "cpu"); got != want {
		t.Fatalf("after a late duplicate: stored %+v, want %+v", got, want)
	}
	// The same reference, code and target queued again (another problem
	// with the same reference) behind two jobs of no cost: it goes first.
	if got, want := claimOrder(t, f.q, []string{"code a", "slow code", "code c"}, 3), []string{"slow code", "code a", "code c"}; !slices.Equal(got, want) {
		t.Fatalf("claimed %q, want %q", got, want)
	}
}

// A problem without a target keeps the cost under the target the
// evaluation ran on, as the harness keys its own (a claim of such a job
// looks on any target).
func TestCompleteRecordsCostUntargeted(t *testing.T) {
	f := newCostFixture(t)
	if r, _ := f.report(search.Problem{Name: "t/untargeted"}, "code", workerResult(t, 3, 1, 2, nil), ""); !r.Accepted {
		t.Fatalf("result refused: %s", r.Why)
	}
	if got, ok := f.stored("code", "cpu"); !ok || got.BuildS != 4 || got.DeviceS != 2 {
		t.Errorf("stored %+v, %v; want build 4 s, device 2 s on cpu", got, ok)
	}
}

// Rejected and malformed reports, worker errors and cached answers keep no
// cost.
func TestCompleteRecordsNoCost(t *testing.T) {
	for _, c := range []struct {
		name     string
		res      *search.Result
		token    string
		accepted bool
	}{
		{"a worker error", nil, "", true},
		{"no harness result in it", &search.Result{Verdict: "pass", Correct: true, WallS: 9}, "", true},
		{"a harness result that does not read", &search.Result{Verdict: "pass", Raw: json.RawMessage(`{"verdict":"pass","stage_s":{"device_held":"long"}}`)}, "", true},
		{"a harness result without a verdict", &search.Result{Verdict: "pass", Raw: json.RawMessage(`{"stage_s":{"device_held":20}}`)}, "", true},
		{"negative seconds", workerResult(t, 30, 5, -20, nil), "", true},
		{"a cached answer", workerResult(t, 30, 5, 20, func(r *harness.EvalResult) { r.Cached = true }), "", true},
		{"rejected: another lease", workerResult(t, 30, 5, 20, nil), "another lease", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCostFixture(t)
			if r, _ := f.report(firstProblem, "code", c.res, c.token); r.Accepted != c.accepted {
				t.Fatalf("accepted %v (%s), want %v", r.Accepted, r.Why, c.accepted)
			}
			if got, ok := f.stored("code", ""); ok {
				t.Errorf("stored %+v, want nothing", got)
			}
		})
	}
}

// On a database without eval_cost (no harness Evaluator ever opened it) a
// result is stored all the same: its cost is only an order hint.
func TestCompleteWithoutEvalCost(t *testing.T) {
	f := newCostFixtureOn(t, openTestDB(t, ""))
	r, job := f.report(firstProblem, "code", workerResult(t, 30, 5, 20, nil), "")
	if !r.Accepted {
		t.Fatalf("result refused: %s", r.Why)
	}
	if j, err := f.q.Job(context.Background(), job.ID); err != nil || j.State != JobDone || j.Result == nil || j.Result.Verdict != "pass" {
		t.Fatalf("job %+v %v; want done with its result", j, err)
	}
}

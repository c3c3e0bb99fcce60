package fleet

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// withEvalCost migrates the harness's eval_cost table into db the way a
// coordinator's own harness evaluator does (no Python is started).
func withEvalCost(t *testing.T, db *sql.DB) {
	t.Helper()
	py, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(), DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
}

// claimOrder enqueues codes (a second apart, so the oldest is clear) and
// returns the codes a CPU worker with slots job slots claims, in claim
// order.
func claimOrder(t *testing.T, q *Queue, codes []string, slots int) []string {
	t.Helper()
	ctx := context.Background()
	clk := fakeClock(q, 0)
	for _, code := range codes {
		if _, err := q.Enqueue(ctx, testProblem, Kind{Target: "cpu"}, "ref", code, 0, false); err != nil {
			t.Fatal(err)
		}
		clk.add(time.Second)
	}
	register(t, q, "w", Device{Index: 0, Target: "cpu", Jobs: slots})
	jobs, err := q.Claim(ctx, "w", slices.Repeat([]int{0}, slots))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, j.Code)
	}
	return got
}

// A worker claims the costliest queued jobs first, by the build and device
// seconds the harness stored for the job's reference, code and target; a
// job never measured ranks by its code's words (harness.OrderCost), and
// equals go oldest first.
func TestClaimOrderByStoredCost(t *testing.T) {
	type stored struct {
		ref, code, target string
		cost              harness.Cost
	}
	codes := []string{"code a", "code b", "code c"}
	cases := []struct {
		name    string
		noTable bool // a coordinator database no harness evaluator opened
		stored  []stored
		codes   []string
		slots   int
		want    []string
	}{{
		name:  "nothing stored: oldest first",
		codes: codes, slots: 3,
		want: codes,
	}, {
		name: "measured costs, costliest first",
		stored: []stored{
			{"ref", "code a", "cpu", harness.Cost{BuildS: 1, DeviceS: 1}},
			{"ref", "code b", "cpu", harness.Cost{BuildS: 20, DeviceS: 10}},
			{"ref", "code c", "cpu", harness.Cost{BuildS: 50, DeviceS: 10}},
		},
		codes: codes, slots: 3,
		want: []string{"code c", "code b", "code a"},
	}, {
		name: "one free slot takes the costliest, not the oldest",
		stored: []stored{
			{"ref", "code b", "cpu", harness.Cost{BuildS: 20, DeviceS: 10}},
		},
		codes: codes, slots: 1,
		want: []string{"code b"},
	}, {
		name: "an unmeasured torch.compile job (40 s by words) between measured 60 s and 5 s",
		stored: []stored{
			{"ref", "code a", "cpu", harness.Cost{BuildS: 2, DeviceS: 3}},
			{"ref", "code c", "cpu", harness.Cost{BuildS: 30, DeviceS: 30}},
		},
		codes: []string{"code a", "f = torch.compile(g)", "code c"}, slots: 3,
		want: []string{"code c", "f = torch.compile(g)", "code a"},
	}, {
		name:   "a cost on another target is not this job's",
		stored: []stored{{"ref", "code c", "nvidia", harness.Cost{BuildS: 90, DeviceS: 90}}},
		codes:  codes, slots: 3,
		want: codes,
	}, {
		name:   "a cost against another reference is not this job's",
		stored: []stored{{"another ref", "code c", "cpu", harness.Cost{BuildS: 90, DeviceS: 90}}},
		codes:  codes, slots: 3,
		want: codes,
	}, {
		name:    "without eval_cost, words alone",
		noTable: true,
		codes:   []string{"code a", "import triton", "load_inline(x)"}, slots: 3,
		want: []string{"load_inline(x)", "import triton", "code a"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := openTestDB(t, "")
			if !c.noTable {
				withEvalCost(t, db)
			}
			for _, s := range c.stored {
				if err := harness.RecordCost(context.Background(), db, s.ref, s.code, s.target, s.cost); err != nil {
					t.Fatal(err)
				}
			}
			if got := claimOrder(t, newTestQueue(t, db), c.codes, c.slots); !slices.Equal(got, c.want) {
				t.Errorf("claimed %q, want %q", got, c.want)
			}
		})
	}
}

// A suite evaluated through the fleet reads stored costs through its
// Evaluator: the coordinator's database, as the queue reads it.
func TestFleetEvaluatorStoredCost(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t, "")
	withEvalCost(t, db)
	want := harness.Cost{BuildS: 4, DeviceS: 5, WallS: 12}
	if err := harness.RecordCost(ctx, db, "ref", "code", "cpu", want); err != nil {
		t.Fatal(err)
	}
	e := &Evaluator{Queue: newTestQueue(t, db)}
	for _, c := range []struct {
		target string
		ok     bool
	}{{"cpu", true}, {"auto", true}, {"nvidia", false}} {
		got, ok := e.StoredCost(ctx, "ref", "code", c.target)
		if ok != c.ok || (ok && got != want) {
			t.Errorf("StoredCost on %q = %+v, %v; want %+v, %v", c.target, got, ok, want, c.ok)
		}
	}
}

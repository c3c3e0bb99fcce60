package suite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// costFixture is a suite's CPU problems and a harness evaluator on a real
// SQLite store (its eval_cost table migrated, no Python started).
type costFixture struct {
	db    *sql.DB
	st    *store.SQLite
	ev    *harness.Evaluator
	probs []Problem
}

func newCostFixture(t *testing.T, py string, names ...string) *costFixture {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(), DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	f := &costFixture{db: db, st: st, ev: ev}
	root := t.TempDir()
	for _, name := range names {
		p, start, err := engine.ResolveProblem(ctx, nil, engine.ProblemSpec{Name: name, Target: "cpu", CorpusRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		f.probs = append(f.probs, Problem{Problem: p, Start: start})
	}
	return f
}

// record stores what an evaluation of problem's reference against cand
// took on target, as the harness records its own evaluations.
func (f *costFixture) record(t *testing.T, name, cand, target string, c harness.Cost) {
	t.Helper()
	for _, p := range f.probs {
		if p.Problem.Name != name {
			continue
		}
		ref, err := problem.ReadFile("reference", p.Problem.ReferencePath)
		if err != nil {
			t.Fatal(err)
		}
		if cand == "" {
			cand = p.Start
		}
		if err := harness.RecordCost(context.Background(), f.db, string(ref), cand, target, c); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no problem %s", name)
}

// firstRound is the problems in the order the budgeter gives them their
// first turn.
func firstRound(t *testing.T, b Budgeter, states []State) []string {
	t.Helper()
	var got []string
	for range states {
		i, n, ok := b.Next(states)
		if !ok {
			t.Fatalf("no turn after %v", got)
		}
		got = append(got, states[i].Name)
		states[i].Used += n
	}
	return got
}

// A suite's problems get their turns costliest first by the stored cost of
// their start kernel against their reference on their target; a problem
// never measured ranks by its start kernel's words (harness.OrderCost), and
// equals keep the suite's order.
func TestSuiteTurnOrderByStoredCost(t *testing.T) {
	py, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	names := []string{"other/relu", "llm/rmsnorm", "other/cumsum"}
	type stored struct {
		name, cand, target string // cand "": the problem's start kernel
		cost               harness.Cost
	}
	cases := []struct {
		name   string
		stored []stored
		want   []string
	}{{
		name:   "nothing stored: the suite's order",
		stored: nil,
		want:   names,
	}, {
		name: "measured costs, costliest first",
		stored: []stored{
			{name: "other/relu", target: "cpu", cost: harness.Cost{BuildS: 2, DeviceS: 3}},
			{name: "llm/rmsnorm", target: "cpu", cost: harness.Cost{BuildS: 5, DeviceS: 45}},
			{name: "other/cumsum", target: "cpu", cost: harness.Cost{BuildS: 15, DeviceS: 5}},
		},
		want: []string{"llm/rmsnorm", "other/cumsum", "other/relu"},
	}, {
		name: "a problem never measured ranks by its start's words (10 s) among measured ones",
		stored: []stored{
			{name: "other/relu", target: "cpu", cost: harness.Cost{BuildS: 1, DeviceS: 1}},
			{name: "other/cumsum", target: "cpu", cost: harness.Cost{BuildS: 30, DeviceS: 30}},
		},
		want: []string{"other/cumsum", "llm/rmsnorm", "other/relu"},
	}, {
		name: "a cost on another target is not this suite's",
		stored: []stored{
			{name: "other/cumsum", target: "nvidia", cost: harness.Cost{BuildS: 90, DeviceS: 90}},
		},
		want: names,
	}, {
		name: "a cost of another candidate is not the start kernel's",
		stored: []stored{
			{name: "other/cumsum", cand: "class ModelNew: pass", target: "cpu", cost: harness.Cost{BuildS: 90, DeviceS: 90}},
		},
		want: names,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newCostFixture(t, py, names...)
			for _, p := range f.probs {
				if w := harness.ExpectedCost(p.Start); w != 1 {
					t.Fatalf("%s: start kernel's words weigh %d; the cases assume 1 (a kevolve loader)", p.Problem.Name, w)
				}
			}
			for _, s := range c.stored {
				f.record(t, s.name, s.cand, s.target, s.cost)
			}
			r := &Runner{Engine: &engine.Engine{Store: f.st, Eval: &harnesseval.Adapter{Ev: f.ev}}}
			states := make([]State, len(f.probs))
			for i, p := range f.probs {
				states[i].Name = p.Problem.Name
			}
			r.turnCosts(context.Background(), f.probs, states)
			if got := firstRound(t, Budgeter{Total: 3 * len(states), Chunk: 1}, states); !slices.Equal(got, c.want) {
				t.Errorf("first turns %v, want %v", got, c.want)
			}
		})
	}
}

// Run itself orders its turns by stored cost: two problems with a budget of
// one evaluation each, the second costlier by its start kernel's stored
// cost, are evaluated second first (on the real harness).
func TestSuiteRunStartsCostliestProblem(t *testing.T) {
	py := toolchaintest.Python(t)
	f := newCostFixture(t, py, "other/relu", "llm/rmsnorm")
	f.record(t, "llm/rmsnorm", "", "cpu", harness.Cost{BuildS: 40, DeviceS: 20})
	e := &engine.Engine{Store: f.st, Eval: &harnesseval.Adapter{Ev: f.ev, Trials: 1, SkipTiming: true}, Operator: tuner.New()}
	var turns []string
	r := &Runner{Engine: e, Budget: Budgeter{Total: 2, Chunk: 1}, Seed: 3, Devices: []string{"cpu"},
		OnTurn: func(s State) { turns = append(turns, s.Name) }}
	if _, err := r.Run(context.Background(), "s-cost", f.probs); err != nil {
		t.Fatal(err)
	}
	if want := []string{"llm/rmsnorm", "other/relu"}; !slices.Equal(turns, want) {
		t.Errorf("turns %v, want %v", turns, want)
	}
}

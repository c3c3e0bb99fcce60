package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/policy"
)

// liveEvaluator is the real harness (warm Python worker, gcc through
// load_c) behind the search's adapter, with a kernel cache of its own.
func liveEvaluator(t *testing.T) *harnesseval.Adapter {
	t.Helper()
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return &harnesseval.Adapter{Ev: ev, Timeout: 120 * time.Second}
}

func liveProblem(t *testing.T, name string) (search.Problem, string) {
	t.Helper()
	p, start, err := ResolveProblem(context.Background(), nil, ProblemSpec{Name: name, Target: "cpu", CorpusRoot: filepath.Join(t.TempDir(), "corpus")})
	if err != nil {
		t.Fatal(err)
	}
	return p, start
}

// TestLiveTunerImprovesCStart: the tuner, on the real harness with real
// gcc, finds a clearly faster variant of a corpus C start kernel (the
// matmul's naive i-j-k loop, whose TUNABLES hold the vectorizable i-k-j);
// and UCT and evolve each drive a short live run to its budget.
func TestLiveTunerImprovesCStart(t *testing.T) {
	// One OpenMP thread for the eager reference as for the candidate. The
	// fitness is a ratio to eager timed in the same evaluation, and on a
	// 2-core host shared with other packages a multi-threaded torch matmul
	// swung 25x from one evaluation to the next (threads spinning at
	// barriers while others wait for a core): in CI that ranked a variant
	// 25x slower than the start as the best. The worker inherits OMP_*.
	t.Setenv("OMP_NUM_THREADS", "1")
	ad := liveEvaluator(t)
	e, st := newTestEngine(t, ad)
	// Pure coordinate descent (no random restarts), so the first moves are
	// the start's nearest neighbours whatever the seed.
	e.Operator = &tuner.Tuner{}
	prob, start := liveProblem(t, "other/matmul_fp32")
	// The start runs on one thread. Tests share a 2-core machine with
	// other packages, and there OpenMP's all-core default (threads spinning
	// at barriers while others wait for a core) timed 5-15x apart from one
	// evaluation to the next (cv up to 1.1): one unlucky timing of the
	// winning move made greedy walk away from it in CI. On one thread the
	// test is about what the tuner must find, the loop order.
	oneThread := strings.Replace(start, "\nTHREADS = 0 ", "\nTHREADS = 1 ", 1)
	if oneThread == start {
		t.Fatal("the matmul start kernel no longer declares THREADS = 0")
	}
	// And the tuner does not move THREADS: a num_threads(2) or (4) variant
	// spins the same way whatever OMP_NUM_THREADS says.
	fixed := strings.Replace(oneThread, `"THREADS": [0, 1, 2, 4], `, "", 1)
	if fixed == oneThread {
		t.Fatal("the matmul start kernel's TUNABLES no longer list THREADS as [0, 1, 2, 4]")
	}
	start = fixed
	ctx := context.Background()
	run, err := e.Run(ctx, StartOptions{Problem: prob, StartCode: start, Policy: "greedy", Budget: search.Budget{Evals: 6}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run, _ = st.Run(ctx, run.ID)
	nodes, _ := st.Nodes(ctx, run.ID)
	sum := search.Summarize(run, nodes)
	for _, n := range nodes {
		if n.Result != nil {
			t.Logf("  node %d (parents %v, %s): %s %.3g s, cv %.2f, %s", n.ID, n.Parents, n.State, n.Result.Verdict, n.Result.TimeS, n.Result.CV, n.Notes)
		} else {
			t.Logf("  node %d (parents %v, %s): %s %s", n.ID, n.Parents, n.State, n.Notes, n.Error)
		}
	}
	t.Logf("greedy: start %.3g s, best #%d %.3g s (%s): %.2fx over start, %.2fx over eager", sum.Start.TimeS, sum.Best.ID, sum.Best.TimeS, sum.Best.Notes, sum.Best.SpeedupOverStart, sum.Best.SpeedupVsEager)
	if sum.Evaluations != 6 || sum.Start.Verdict != search.VerdictPass {
		t.Fatalf("summary %+v", sum)
	}
	// The loop's own time (selection, proposals, store writes) beside the
	// evaluations it waits on: well under the 10% the acceptance allows.
	if loop := (sum.ElapsedS - sum.EvalS) / sum.ElapsedS; loop > 0.10 {
		t.Errorf("the search loop took %.1f%% of the run's wall time outside evaluations", loop*100)
	}
	if sum.Best.SpeedupOverStart < 1.3 {
		t.Errorf("the tuner found only %.2fx over the start kernel; want a clear margin (>= 1.3x)", sum.Best.SpeedupOverStart)
	}
	for _, pol := range []string{"uct", "evolve"} {
		// A store of its own: the first run's evaluations would answer
		// this one's from the store.
		e, st := newTestEngine(t, ad)
		cfg := Config{Policy: policy.Config{Draft: 2, Islands: 2}}
		r, err := e.Run(ctx, StartOptions{Problem: prob, StartCode: start, Policy: pol, Config: cfg, Budget: search.Budget{Evals: 4}, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		r, _ = st.Run(ctx, r.ID)
		ns, _ := st.Nodes(ctx, r.ID)
		s := search.Summarize(r, ns)
		if r.Status != search.RunDone || s.Evaluations != 4 || s.Best == nil {
			t.Fatalf("%s: status %s (%s), summary %+v", pol, r.Status, r.StopReason, s)
		}
		for _, n := range ns {
			if n.DuplicateOf == 0 && n.Result != nil && n.Result.Cached {
				t.Errorf("%s: node %d came from the harness cache", pol, n.ID)
			}
		}
		t.Logf("%s: %d evaluations, %d answered from the store, best %.2fx over start", pol, s.Evaluations, s.Duplicates, s.Best.SpeedupOverStart)
	}
}

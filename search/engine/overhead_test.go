package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
)

// TestSearchOverhead measures, in one run, evaluations per hour of a tuner
// search against the same evaluations back to back through the evaluation
// service alone (acceptance: >= 90%). Each pass has its own warm worker and
// its own cold kernel cache, so neither inherits the other's compiles.
// KEVOLVE_BENCH=1 turns it on (on the CPU; with KEVOLVE_GPU=1 on the GPU
// with the CUDA start); KEVOLVE_BENCH_PROBLEM and KEVOLVE_BENCH_EVALS tune it.
func TestSearchOverhead(t *testing.T) {
	if os.Getenv("KEVOLVE_BENCH") != "1" {
		t.Skip("benchmark: set KEVOLVE_BENCH=1")
	}
	py := toolchaintest.Python(t)
	ctx := context.Background()
	target, lang, evals := "cpu", "c", envInt("KEVOLVE_BENCH_EVALS", 12)
	if os.Getenv("KEVOLVE_GPU") == "1" {
		target, lang, evals = "nvidia", "cuda", envInt("KEVOLVE_BENCH_EVALS", 30)
	}
	name := os.Getenv("KEVOLVE_BENCH_PROBLEM")
	if name == "" {
		name = "llm/rmsnorm"
	}
	if target == "nvidia" && os.Getenv("KEVOLVE_BENCH_PROBLEM") == "" {
		name = "other/relu" // ITEMS x THREADS: 20 variants
	}
	prob, start, err := ResolveProblem(ctx, nil, ProblemSpec{Name: name, Target: target, Language: lang, CorpusRoot: filepath.Join(t.TempDir(), "corpus")})
	if err != nil {
		t.Fatal(err)
	}
	newAdapter := func() *harnesseval.Adapter {
		ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ev.Close() })
		if _, _, err := ev.Device(ctx); err != nil { // starts the warm worker
			t.Fatal(err)
		}
		return &harnesseval.Adapter{Ev: ev, Timeout: 120 * time.Second}
	}

	// Pass 1: the search.
	e, st := newTestEngine(t, newAdapter())
	t0 := time.Now()
	run, err := e.Run(ctx, StartOptions{Problem: prob, StartCode: start, Policy: "greedy", Budget: search.Budget{Evals: evals}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	searchS := time.Since(t0).Seconds()
	nodes, _ := st.Nodes(ctx, run.ID)
	var codes []*search.Node
	for _, n := range nodes {
		if n.State == search.NodeDone && n.DuplicateOf == 0 {
			codes = append(codes, n)
		}
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i].EvalSeq < codes[j].EvalSeq })

	// Pass 2: the same kernels back to back through the evaluation service.
	ad := newAdapter()
	t1 := time.Now()
	for _, n := range codes {
		if _, err := ad.Evaluate(ctx, prob, n.Code); err != nil {
			t.Fatal(err)
		}
	}
	serviceS := time.Since(t1).Seconds()
	k := float64(len(codes))
	perHourSearch, perHourService := k/searchS*3600, k/serviceS*3600
	ratio := perHourSearch / perHourService
	evalS := 0.0
	for _, n := range codes {
		evalS += n.Cost.EvalS
	}
	t.Logf("%s on %s: %d evaluations; search %.1f s (%.0f/h), service alone %.1f s (%.0f/h): search runs at %.1f%% of the service's rate; the loop's own time is %.2f%% of the search's wall time",
		name, target, len(codes), searchS, perHourSearch, serviceS, perHourService, ratio*100, (searchS-evalS)/searchS*100)
	if ratio < 0.9 {
		t.Errorf("search overhead: %.1f%% of the back-to-back rate, want >= 90%%", ratio*100)
	}
}

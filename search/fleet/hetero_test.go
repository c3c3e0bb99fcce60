package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// kindRunner stands in for an evaluation service on hardware this machine
// lacks (an H100 and an MI300X): it answers from the job's kind, so the
// test can check routing, per-kind results and the primary's fitness.
// Real evaluations through real workers are the other tests' business.
type kindRunner struct {
	mu   sync.Mutex
	seen map[string][]string // device name -> job kinds
}

func (k *kindRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	k.mu.Lock()
	k.seen[dev.Name] = append(k.seen[dev.Name], job.Kind.String())
	k.mu.Unlock()
	t := 2e-3
	if dev.Target == "amd" {
		t = 3e-3
	}
	return &search.Result{Verdict: search.VerdictPass, Correct: true, Device: dev.Name, TimeS: t, EagerS: 4e-3, SpeedupVsEager: 4e-3 / t}, nil
}

func TestHeterogeneousKinds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	db := openTestDB(t, filepath.Join(dir, "fleet.db"))
	st, _ := store.New(ctx, db)
	q, _ := NewQueue(ctx, db)
	coord := listenTest(t, q)
	runner := &kindRunner{seen: map[string][]string{}}
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range []*Worker{
		{Name: "h100-box", Devices: []Device{{Index: 0, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100 80GB HBM3"}, {Index: 1, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100 80GB HBM3"}}},
		{Name: "mi300-box", Devices: []Device{{Index: 0, Target: "amd", Arch: "gfx942", Name: "AMD Instinct MI300X"}}},
	} {
		w.Coordinator, w.Token, w.Runner, w.Drain = coord.URL(), "tk", runner, time.Second
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(wctx) }()
	}
	defer func() { stopWorkers(); wg.Wait() }()

	ref := filepath.Join(dir, "ref.py")
	os.WriteFile(ref, []byte("# reference\n"), 0o644)
	start := "X = 1\nY = 1\nTUNABLES = {\"X\": [1, 2, 3, 4], \"Y\": [1, 2, 3]}\nclass ModelNew: pass\n"
	kinds, err := ParseKinds("nvidia:sm_90,amd:gfx942")
	if err != nil {
		t.Fatal(err)
	}
	eng := &engine.Engine{Store: st, Eval: &Evaluator{Queue: q, Kinds: kinds}, Operator: tuner.New()}
	p := search.Problem{Name: "t/hetero", ReferencePath: ref, Target: "nvidia", Language: "cuda"}
	run, err := eng.Run(ctx, engine.StartOptions{RunID: "het", Problem: p, StartCode: start, Policy: "greedy", Budget: search.Budget{Evals: 4}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := st.Nodes(ctx, run.ID)
	for _, n := range nodes {
		if n.Result == nil || n.Result.Device != "NVIDIA H100 80GB HBM3" {
			t.Errorf("node %d: the primary kind's result should be the node's: %+v", n.ID, n.Result)
			continue
		}
		if !strings.Contains(n.Result.Log, "amd:gfx942: pass") {
			t.Errorf("node %d: the other kind's result is not beside it: %q", n.ID, n.Result.Log)
		}
		krs, err := KindResults(ctx, q, p, n.Code)
		if err != nil || len(krs) != 2 {
			t.Errorf("node %d: %d kind results (%v)", n.ID, len(krs), err)
		}
	}
	for dev, ks := range runner.seen {
		for _, k := range ks {
			if strings.Contains(dev, "H100") != strings.HasPrefix(k, "nvidia") {
				t.Errorf("a %s job ran on %s", k, dev)
			}
		}
	}
	run, _ = st.Run(ctx, run.ID)
	panel, err := RunPanel(ctx, db, run, nodes)
	if err != nil || panel == nil {
		t.Fatalf("panel: %v", err)
	}
	if len(panel.Kinds) != 2 || len(panel.Workers) != 2 || len(panel.Nodes) != 4 {
		t.Errorf("panel: %d kinds, %d workers, %d nodes", len(panel.Kinds), len(panel.Workers), len(panel.Nodes))
	}
	evals := 0
	for _, w := range panel.Workers {
		evals += w.Evaluations
	}
	if evals != 8 {
		t.Errorf("panel counts %d evaluations, want 4 nodes x 2 kinds", evals)
	}
	var b strings.Builder
	panel.WriteText(&b)
	t.Log("\n" + b.String())
	// The run's HTML report carries the panel.
	page, err := engine.WriteReport(ctx, st, run.ID, filepath.Join(dir, "report"), nil)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	for _, want := range []string{`class="panel fleet"`, "mi300-box", "h100-box", "amd:gfx942", "nvidia:sm_90"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

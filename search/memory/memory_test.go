package memory

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/knowledge"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/cmdop"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func TestOpSequence(t *testing.T) {
	ref := `import torch
class Model(torch.nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, w):
        x = x.float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

def get_inputs():
    return [torch.randn(8, 8)]
`
	if got := OpSequence(ref); got != "rsqrt pow mean" {
		t.Errorf("%q", got)
	}
	if OpSequence("x = 1") != "" {
		t.Error("no forward, yet ops")
	}
}

func TestSimilar(t *testing.T) {
	a := search.Problem{Name: "llm/rmsnorm", ShapeSet: "small", Bytes: 1e6}
	cases := []struct {
		b    search.Problem
		want bool
	}{
		{search.Problem{Name: "llm/rmsnorm", ShapeSet: "small", Bytes: 2e6}, true},
		{search.Problem{Name: "llm/rmsnorm", ShapeSet: "large"}, false},
		{search.Problem{Name: "llm/rmsnorm", Bytes: 1e9}, false},
		{search.Problem{Name: "llm/softmax", ShapeSet: "small"}, false},
	}
	for _, c := range cases {
		if got, _ := Similar(a, c.b); got != c.want {
			t.Errorf("%+v: %v", c.b, got)
		}
	}
}

func openStore(t *testing.T, path string) (*sql.DB, search.Store) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return db, st
}

// TestWriteBackAndCrossRunMemory: a first run on llm/rmsnorm ends and
// writes its best kernel back as an examples/ document; the knowledge index
// finds it at once. A second run on a similar problem (the same reference
// saved as a KernelBench file elsewhere: another name, the same op
// sequence) gets that kernel in its draft phase, evaluated for real.
func TestWriteBackAndCrossRunMemory(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	dir := t.TempDir()
	db, st := openStore(t, filepath.Join(dir, "k.db"))
	ctx := context.Background()
	p, start, err := engine.ResolveProblem(ctx, nil, engine.ProblemSpec{Name: "llm/rmsnorm", Target: "cpu", CorpusRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := filepath.Abs("../operator/cmdop/testdata/agents/faster.sh")
	op, err := cmdop.New("cmd:"+agent, cmdop.Config{Deadline: time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 2}, Operator: op}
	run1, err := e.Run(ctx, engine.StartOptions{Problem: p, StartCode: start, Budget: search.Budget{Evals: 2}, Seed: 1, Devices: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	run1, _ = st.Run(ctx, run1.ID)
	best1, err := st.Node(ctx, run1.BestNode)
	if err != nil {
		t.Fatal(err)
	}

	kb := filepath.Join(dir, "knowledge")
	w, err := WriteBack(ctx, st, run1.ID, kb)
	if err != nil || w.Path == "" || w.Kept {
		t.Fatalf("write-back %+v: %v", w, err)
	}
	raw, _ := os.ReadFile(w.Path)
	doc, err := knowledge.Parse(ExamplesDir+"/"+filepath.Base(w.Path), raw)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Vendor != "cpu" || doc.Arch != "x86" || !strings.Contains(doc.Body, strings.TrimSpace(best1.Code)[:60]) ||
		!strings.Contains(string(raw), "diagnosis_path:") || !strings.Contains(string(raw), "op_sequence:") {
		t.Errorf("document:\n%s", raw)
	}
	if best1.ID != 1 && !strings.Contains(doc.Body, "float accumulator") {
		t.Errorf("the what-worked note lacks the winning node's notes:\n%s", doc.Body)
	}
	// Indexed at once: a fresh index over the user's directory finds it.
	ix, err := retrieval.Open(ctx, db, nil, retrieval.DirSource(kb))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ix.Search(ctx, retrieval.Query{Text: "rmsnorm search winner c kernel", Device: "cpu", K: 5})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range resp.Results {
		found = found || strings.Contains(r.Path, "kevolve-runs/")
	}
	if !found {
		t.Errorf("search_knowledge does not find the written example: %+v", resp.Results)
	}
	// A second write-back of a worse run keeps the better document.
	if w2, err := WriteBack(ctx, st, run1.ID, kb); err != nil || w2.Kept {
		t.Errorf("rewriting the same run: %+v %v", w2, err)
	}

	// The second run: the same reference under another name.
	ref2 := filepath.Join(t.TempDir(), "my_rmsnorm.py")
	b, _ := os.ReadFile(p.ReferencePath)
	os.WriteFile(ref2, b, 0o644)
	p2 := search.Problem{Name: ref2, ReferencePath: ref2, Target: "cpu", Language: "c"}
	priors, err := Find(ctx, st, p2, []string{"cpu"}, "", 3)
	if err != nil || len(priors) != 1 || priors[0].RunID != run1.ID || priors[0].Port || !strings.Contains(priors[0].Why, "op sequence") {
		t.Fatalf("priors %+v: %v", priors, err)
	}
	e.Operator, _ = cmdop.New("cmd:"+agent, cmdop.Config{Deadline: time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}})
	// Run 2 starts from its own kernel (another OpenMP schedule), so run
	// 1's best, whichever node won, is new to it.
	start2 := strings.Replace(start, `SCHEDULE = "static"`, `SCHEDULE = "guided"`, 1)
	t.Logf("run 1's best: node %d (%.3fx)", best1.ID, best1.Fitness())
	run2, err := e.Create(ctx, engine.StartOptions{Problem: p2, StartCode: start2, Budget: search.Budget{Evals: 2}, Seed: 2, Devices: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	seeded, err := Seed(ctx, st, run2.ID, priors)
	if err != nil || len(seeded) != 1 {
		t.Fatalf("seeded %d: %v", len(seeded), err)
	}
	if err := e.Drive(ctx, run2.ID); err != nil {
		t.Fatal(err)
	}
	nodes, _ := st.Nodes(ctx, run2.ID)
	var mem *search.Node
	for _, n := range nodes {
		if n.Operator == "memory" {
			mem = n
		}
	}
	if mem == nil || mem.Code != best1.Code || mem.Depth != 1 || !mem.Evaluated() || mem.Result.Verdict != search.VerdictPass || mem.DuplicateOf != 0 {
		t.Fatalf("run 2's draft lacks run 1's best kernel, evaluated: %+v", mem)
	}
	// Ports: the same prior seen from another target is offered, not seeded.
	pn := p2
	pn.Target, pn.Language = "nvidia", "cuda"
	ports, _ := Find(ctx, st, pn, []string{"NVIDIA H100 80GB HBM3"}, "", 3)
	if len(ports) == 0 || !ports[0].Port || ports[0].Arch != "x86" {
		t.Errorf("ports %+v", ports)
	}
}

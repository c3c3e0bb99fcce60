package optimize

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/search/deploy"
)

// TestPick: which regions a job searches and from what: a region the
// registry already solved on this arch starts from that kernel (cross-run
// memory, whatever its shapes), one matching a bundled operator from its
// start kernel, one with neither needs an agent when the operator is the
// tuner (and starts from its reference otherwise); small regions wait.
func TestPick(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg, err := deploy.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	prior := "from kevolve import load_c\n_K = load_c(SRC)  # an earlier winner\nclass ModelNew: pass\n"
	for _, e := range []deploy.Entry{
		{Op: "rmsnorm", Shapes: [][]int64{{64, 256}, {256}}, Dtype: "float32", Arch: "cpu-x86_64", Speedup: 1.5, Source: prior},
		{Op: "swiglu", Shapes: [][]int64{{64, 512}}, Dtype: "float32", Arch: "sm_90", Speedup: 2, Source: "load_cuda(\n"}, // another arch
	} {
		if _, err := reg.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ref := filepath.Join(t.TempDir(), "lin.py")
	regions := []extract.Region{
		{Sig: "rmsnorm", Bundled: "llm/rmsnorm", File: "/x/00_rmsnorm.py", Share: 0.3},
		{Sig: "swiglu", Bundled: "llm/swiglu", File: "/x/01_swiglu.py", Share: 0.2},
		{Sig: "linear", File: ref, Share: 0.4},
		{Sig: "layernorm", Bundled: "llm/layernorm", File: "/x/03_layernorm.py", Share: 0.01},
	}
	s := &Summary{Arch: "cpu-x86_64"}
	for i := range regions {
		s.Ops = append(s.Ops, Op{Name: regions[i].Sig, Sig: regions[i].Sig, Share: regions[i].Share, Saving: regions[i].Share, region: &regions[i]})
	}
	p, err := priorKernels(ctx, db, "cpu-x86_64", "c")
	if err != nil {
		t.Fatal(err)
	}
	probs, weights := pick(s, Options{Target: "cpu", Language: "c", Tuner: true, MinShare: 0.02}, p)
	if len(probs) != 2 || probs[0].Start != prior || !strings.Contains(probs[1].Start, "load_c") || probs[1].Start == prior {
		t.Fatalf("searched %d problems: %+v", len(probs), probs)
	}
	notes := map[string]string{}
	for _, op := range s.Ops {
		notes[op.Sig] = op.Note
	}
	for sig, want := range map[string]string{"rmsnorm": "registry entry", "swiglu": "bundled c kernel of llm/swiglu", "linear": "needs an LLM or agent operator", "layernorm": "under 2%"} {
		if !strings.Contains(notes[sig], want) {
			t.Errorf("%s: note %q, want %q", sig, notes[sig], want)
		}
	}
	if weights["/x/00_rmsnorm.py"] <= weights["/x/01_swiglu.py"] {
		t.Errorf("weights %v: the larger saving must weigh more", weights)
	}
}

package optimize

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/search/deploy"
)

// profileGPT profiles testdata/gpt_break.py (torch.fx cannot trace it;
// TorchDynamo breaks its graph between the blocks).
func profileGPT(t *testing.T, e *env) (*Summary, string) {
	t.Helper()
	model, _ := filepath.Abs("testdata/gpt_break.py")
	s, err := ProfileModel(context.Background(), e.ev, e.db, Options{Model: model, Target: "cpu", Language: "c", DataDir: e.dir, Iters: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(s.Profile, "", " ")
	t.Logf("profile: %s", b)
	return s, model
}

func regionOfKind(s *Summary, kind string) *extract.Region {
	for i := range s.Profile.Regions {
		if s.Profile.Regions[i].Kind == kind {
			return &s.Profile.Regions[i]
		}
	}
	return nil
}

// TestProfileCapturesWhatFXCannot: the model torch.fx cannot trace is
// captured by TorchDynamo; the break is reported with its cause; the
// written-out attention is one region, one problem for both blocks; and
// the regions, the glue and what was not captured add up to the whole.
func TestProfileCapturesWhatFXCannot(t *testing.T) {
	e := newEnv(t)
	s, _ := profileGPT(t, e)
	p := s.Profile
	if p.Capture == nil {
		t.Fatalf("no capture: %s", p.Note)
	}
	if len(p.Capture.Breaks) == 0 || !strings.Contains(p.Capture.Breaks[0].Cause, "Data-dependent") {
		t.Errorf("graph break not reported with its cause: %+v", p.Capture.Breaks)
	}
	if !strings.Contains(strings.Join(s.Notes, " "), "broke the graph") {
		t.Errorf("the notes do not say the graph broke: %q", s.Notes)
	}
	att := regionOfKind(s, "attention")
	if att == nil {
		t.Fatalf("no attention region among %d regions", len(p.Regions))
	}
	if att.Calls != 2 || !strings.HasPrefix(att.Op, "attention#") || att.File == "" || att.ID == "" {
		t.Errorf("attention: want one problem serving both blocks (calls 2), got %+v", att)
	}
	if len(att.Shapes) != 2 || !slicesEqual(att.Shapes[0], []int64{2, 64, 384}) || !slicesEqual(att.Shapes[1], []int64{1, 1, 64, 64}) {
		t.Errorf("attention's inputs: want the fused qkv [2 64 384] and the mask [1 1 64 64], got %v", att.Shapes)
	}
	ops := map[string]int{}
	total := p.Capture.GlueUs + p.Capture.NotCapturedUs
	for _, r := range p.Regions {
		total += r.TimeUs
		if r.Op != "" {
			ops[r.Op]++
		}
	}
	for op, n := range ops {
		if n > 1 {
			t.Errorf("%s extracted %d times: identical regions are one problem", op, n)
		}
	}
	if math.Abs(total-p.TotalUs) > 1e-6*p.TotalUs || p.Capture.NotCapturedUs <= 0 {
		t.Errorf("regions + glue + not captured = %.1f us, total %.1f us (not captured %.1f)", total, p.TotalUs, p.Capture.NotCapturedUs)
	}
	var shown bool
	for _, op := range s.Ops {
		shown = shown || (op.Kind == "not_captured" && op.Share > 0)
	}
	if !shown {
		t.Errorf("the ranking does not show the time outside the captured graphs: %+v", s.Ops)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameAsReference is a kernel computing what the problem's reference does
// (its own operators), for a deploy test that needs no search: the
// reference's class as ModelNew (a problem reads its data file only when
// asked for its inputs, so the copy needs none).
func sameAsReference(t *testing.T, problem string) string {
	t.Helper()
	b, err := os.ReadFile(problem)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`\bModel\b`).ReplaceAllString(string(b), "ModelNew")
}

// TestDeployCapturedRegion: a kernel for the attention region, registered
// under its op key, is served by a custom op inside torch.compile: the
// patched model is correct, the profiler trace shows the kernel once per
// block, and in a new Python the package patches a fresh copy and its op
// passes torch.library.opcheck.
func TestDeployCapturedRegion(t *testing.T) {
	e := newEnv(t)
	s, model := profileGPT(t, e)
	att := regionOfKind(s, "attention")
	if att == nil {
		t.Fatal("no attention region")
	}
	reg, err := deploy.Open(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	entry := deploy.Entry{Op: att.RegistryOp(), Shapes: att.Shapes, Dtype: att.Dtype, Init: att.Init, Arch: s.Arch,
		Speedup: 1.5, Spread: 0.01, Model: model, Problem: att.File, Source: sameAsReference(t, att.File)}
	if _, err := reg.Put(context.Background(), entry); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(e.dir, "export")
	v, err := VerifyModel(context.Background(), e.ev, e.db, Options{Model: model, Target: "cpu", Language: "c", DataDir: e.dir, Iters: 3, Export: export})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v.EndToEnd, "", " ")
	t.Logf("verify: %s\nnotes %q rejected %q", b, v.Notes, v.Rejected)
	id := entry.Key()
	if v.EndToEnd == nil || !v.EndToEnd.Correct || v.EndToEnd.Engaged[id] != 2 || len(v.Deployed) != 1 {
		t.Fatalf("want the attention kernel deployed, correct and run twice a forward (entry %s), got %+v", id, v.EndToEnd)
	}
	var r struct {
		Same    bool `json:"same"`
		Hits    int  `json:"hits"`
		Opcheck bool `json:"opcheck"`
	}
	e.fresh(t, &r, opcheckScript, export, model, att.File, id)
	if !r.Same || r.Hits != 2 || !r.Opcheck {
		t.Errorf("fresh process: %+v", r)
	}
}

// opcheckScript: args package dir, model file, the region's problem file,
// the entry id. Patches a fresh model, compares it with the original,
// counts the op's kernel calls and runs torch.library.opcheck on the op
// with the problem's own inputs and weights, in the roles the registry
// gives them.
const opcheckScript = `
import importlib.util, json, sys
import torch
sys.path.insert(0, sys.argv[1])
import kevolve_kernels

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m

m = load("m", sys.argv[2])
torch.manual_seed(0)
model = m.Model(*m.get_init_inputs()).eval()
patched = kevolve_kernels.patch(model)
torch.manual_seed(7)
x = m.get_inputs()
with torch.no_grad():
    same = torch.allclose(model(*x), patched(*x), atol=1e-5, rtol=1e-5)
hits = sum(s["hits"] for s in kevolve_kernels.stats(patched) if s.get("entry") == sys.argv[4])
p = load("p", sys.argv[3])
entry = [e for e in kevolve_kernels.registry()["entries"] if e["id"] == sys.argv[4]][0]
acts, ws = iter(p.get_inputs()), iter(p.get_init_inputs())
args = [next(ws) if role == "w" else next(acts) for role in entry["init"]]
op = getattr(torch.ops.kevolve_kernels, "e_" + sys.argv[4]).default
torch.library.opcheck(op, (args,))
print(json.dumps({"same": bool(same), "hits": hits, "opcheck": True}))
`

// TestKeepEngaged: an entry the profiler trace never saw is not deployed,
// and the prediction counts only the entries that ran.
func TestKeepEngaged(t *testing.T) {
	entries := []deploy.Entry{{ID: "a", Op: "rmsnorm", Speedup: 2}, {ID: "b", Op: "attention#x", Speedup: 3}}
	for _, c := range []struct {
		engaged map[string]int
		kept    []string
		shares  []float64
	}{
		{map[string]int{"a": 1, "b": 2}, []string{"a", "b"}, []float64{0.2, 0.3}},
		{map[string]int{"a": 1}, []string{"a"}, []float64{0.2}},
		{nil, nil, nil},
	} {
		s := &Summary{Deployed: append([]deploy.Entry(nil), entries...)}
		used, speedups := s.keepEngaged(c.engaged, entries, []float64{0.2, 0.3})
		var kept []string
		for _, e := range s.Deployed {
			kept = append(kept, e.ID)
		}
		if strings.Join(kept, ",") != strings.Join(c.kept, ",") || len(used) != len(c.shares) || len(speedups) != len(c.kept) {
			t.Errorf("engaged %v: kept %v used %v, want %v %v", c.engaged, kept, used, c.kept, c.shares)
		}
		for i := range used {
			if used[i] != c.shares[i] {
				t.Errorf("engaged %v: shares %v, want %v", c.engaged, used, c.shares)
			}
		}
		if len(s.Rejected) != len(entries)-len(c.kept) {
			t.Errorf("engaged %v: rejected %q", c.engaged, s.Rejected)
		}
	}
}

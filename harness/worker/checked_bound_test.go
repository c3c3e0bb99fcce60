package worker

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The judge's checked calls bound the in-process median at CHECKED_FACTOR
// of their least per-call time, and at CHECKED_FACTOR_LOADED only where
// that refused it through every try while programs outside the evaluation
// kept the host busy (CI read an honest relu C start at over 100x there).
// Load the candidate could have made, or one quiet try, keeps the tight one.
func TestCheckedCallsFactorLoosensOnlyUnderOutsideLoad(t *testing.T) {
	py := toolchaintest.Python(t)
	cases := []struct {
		name     string
		reported float64
		basis    float64
		shares   []float64
		loose    bool
	}{
		{"within the bound", 1e-4, 5e-3, []float64{0.9, 0.9, 0.9}, false},
		{"refused on a quiet host", 6.6e-5, 1e-2, []float64{0.05}, false},
		{"refused, one try quiet", 6.6e-5, 1e-2, []float64{0.7, 0.1, 0.8}, false},
		{"refused, loaded through every try", 6.6e-5, 1e-2, []float64{0.6, 0.7, 0.65}, true},
		{"refused, no load figures", 6.6e-5, 1e-2, nil, false},
	}
	var args []map[string]any
	for _, c := range cases {
		args = append(args, map[string]any{"reported": c.reported,
			"verified": map[string]any{"basis_s": c.basis, "host_external_share": c.shares}})
	}
	in, _ := json.Marshal(args)
	// One interpreter for every case: importing the judge's module (torch)
	// takes seconds on a loaded host.
	script := `import json, sys
sys.path.insert(0, "py")
from evaluate.judge import judge as j
out = []
for a in json.loads(sys.argv[1]):
    rep = {}
    f = j._checked_factor(a["reported"], a["verified"], rep)
    out.append({"factor": f, "tight": j.CHECKED_FACTOR, "loose": j.CHECKED_FACTOR_LOADED, "notes": rep.get("notes", [])})
print(json.dumps(out))`
	out, err := exec.Command(py, "-c", script, string(in)).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []struct {
		Factor, Tight, Loose float64
		Notes                []string
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("%v: %s", err, out)
	}
	for i, c := range cases {
		g := got[i]
		want := g.Tight
		if c.loose {
			want = g.Loose
		}
		if g.Factor != want || g.Loose >= g.Tight || (len(g.Notes) > 0) != c.loose {
			t.Errorf("%s: factor %g (tight %g, loose %g), notes %q; want loose=%v", c.name, g.Factor, g.Tight, g.Loose, g.Notes, c.loose)
		}
	}
}

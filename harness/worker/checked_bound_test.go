package worker

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The judge's checked calls bound the in-process median at CHECKED_FACTOR
// of their least per-call time, and at CHECKED_FACTOR_LOADED only where
// that refused it through every try while programs outside the evaluation
// kept the host busy (CI read an honest relu C start at over 100x there),
// and the least call ran on more than one thread (its threads spin at a
// barrier through the load's time slices; one thread's CPU time has none
// of them: CI passed a thousandfold fake, one thread, at 253x under the
// loose bound). Load the candidate could have made, or one quiet try,
// keeps the tight one.
func TestCheckedCallsFactorLoosensOnlyUnderOutsideLoad(t *testing.T) {
	py := toolchaintest.Python(t)
	cases := []struct {
		name     string
		reported float64
		basis    float64
		shares   []float64
		parallel bool
		loose    bool
		note     string // in the report's notes ("" for none)
	}{
		{"within the bound", 1e-4, 5e-3, []float64{0.9, 0.9, 0.9}, true, false, ""},
		{"refused on a quiet host", 6.6e-5, 1e-2, []float64{0.05}, true, false, ""},
		{"refused, one try quiet", 6.6e-5, 1e-2, []float64{0.7, 0.1, 0.8}, true, false, ""},
		{"refused, loaded through every try", 6.6e-5, 1e-2, []float64{0.6, 0.7, 0.65}, true, true, "kept"},
		{"refused, loaded through every try, one thread", 6.6e-5, 1e-2, []float64{0.6, 0.7, 0.65}, false, false, "one thread"},
		{"refused, no load figures", 6.6e-5, 1e-2, nil, true, false, ""},
	}
	var args []map[string]any
	for _, c := range cases {
		args = append(args, map[string]any{"reported": c.reported,
			"verified": map[string]any{"basis_s": c.basis, "host_external_share": c.shares, "parallel": c.parallel}})
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
		noted := strings.Join(g.Notes, "; ")
		if g.Factor != want || g.Loose >= g.Tight || (c.note == "") != (noted == "") || !strings.Contains(noted, c.note) {
			t.Errorf("%s: factor %g (tight %g, loose %g), notes %q; want loose=%v, a note with %q", c.name, g.Factor, g.Tight, g.Loose, g.Notes, c.loose, c.note)
		}
	}
}

// The judge tells a call made on one thread from one made on several by
// the threads' own CPU time (/proc/PID/task/TID/schedstat): a process
// whose torch runs a matmul loop on two threads, then on one.
func TestJudgeSeesParallelThreads(t *testing.T) {
	py := toolchaintest.Python(t)
	script := `import json, os, sys, time, threading
sys.path.insert(0, "py")
import torch
from evaluate.judge import judge as j
a = torch.randn(384, 384)
out = {}
for n in (2, 1):
    stop = []
    def work():
        torch.set_num_threads(n)  # OpenMP's thread count is the calling thread's
        while not stop:
            a @ a
    th = threading.Thread(target=work)
    th.start()
    time.sleep(0.2)
    pids = [os.getpid()]
    before = j._thread_cpu_ns(pids)
    time.sleep(0.5)
    out[n] = j._parallel(before, j._thread_cpu_ns(pids))
    stop.append(1)
    th.join()
print(json.dumps(out))`
	out, err := exec.Command(py, "-c", script).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got map[string]bool
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !got["2"] || got["1"] {
		t.Fatalf("parallel: two threads %v (want true), one thread %v (want false)", got["2"], got["1"])
	}
}

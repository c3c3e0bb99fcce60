package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Three C++ load_inline candidates with different sources, the same
// interface as inlineCand (the reference is a*2+b).
var pchCands = []string{
	`    for (int64_t i = 0; i < a.numel(); ++i) po[i] = 2.0f * pa[i] + pb[i];`,
	`    const int64_t n = a.numel();
    for (int64_t i = 0; i < n; ++i) { const float x = pa[i]; po[i] = x + x + pb[i]; }`,
	`    auto twice = [](float x) { return x * 2.0f; };
    int64_t n = a.numel();
    while (n--) *po++ = twice(*pa++) + *pb++;`,
}

func pchCand(i int) string {
	return strings.NewReplacer("axpb", fmt.Sprintf("axpb%d", i+1),
		"    for (int64_t i = 0; i < a.numel(); ++i) po[i] = 2.0f * pa[i] + pb[i];", pchCands[i]).Replace(inlineCand)
}

// ninjaDump, appended to a candidate, prints its extensions' build.ninja
// files: its builds are in its job's folder, which goes with the job.
const ninjaDump = `
import glob as _glob, os as _os
for _f in _glob.glob(_os.path.join(_os.environ.get("TORCH_EXTENSIONS_DIR", ""), "*", "build.ninja")):
    print("NINJA-BEGIN " + _f + "\n" + open(_f).read() + "NINJA-END", flush=True)
` + behaviourDump

// behaviourDump prints what the extension's function computes (a hash of
// its outputs on fixed inputs, and whether they are 2a+b), its docstring and
// the error a wrong argument gets: sameOutputs compares two builds by it.
const behaviourDump = `
import hashlib as _hl
_fn = getattr(_ext, [_n for _n in dir(_ext) if _n.startswith("axpb")][0])
_g = torch.Generator().manual_seed(7)
_a, _b = torch.randn(1000, 37, generator=_g), torch.randn(1000, 37, generator=_g)
try:
    _fn(1, 2)
    _bad = "no error"
except TypeError as _e:
    _bad = str(_e)
_o = _fn(_a, _b)
print("BEHAVIOUR", _hl.sha256(_o.numpy().tobytes()).hexdigest(), "right" if torch.equal(_o, _a * 2 + _b) else "wrong",
      repr(_fn.__doc__), repr(_bad).replace("\n", " "), flush=True)
`

// buildS is what a load_inline candidate's build cost its evaluation: the
// harness's build step (the precompiled header, when it had to be made)
// and the candidate's import, where load_inline compiles.
func buildS(r *EvalResult) float64 { return r.StageS[StagePrepareBuild] + r.StageS["load_candidate"] }

// Issue 22: a never-seen C++ load_inline candidate builds in seconds once
// the harness has precompiled torch/extension.h for its flags; the PCH is
// made once per cache and never changes what is built.
func TestLoadInlinePCHBuildsInSeconds(t *testing.T) {
	if gpuMode() {
		t.Skip("the CUDA load_inline path is measured by the benchmark on the GPU machine")
	}
	py := testPython(t)
	evalIn := func(cache string) func(cand string) *EvalResult {
		ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ev.Close() })
		return func(cand string) *EvalResult {
			t.Helper()
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: inlineRef}, Candidate: Source{Code: cand + ninjaDump},
				Target: "cpu", SkipTiming: true, Trials: 2, Timeout: 15 * time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != VerdictPass {
				t.Fatalf("%s at %s:\n%s\n%s", res.Verdict, res.Stage, checksText(res), res.Log)
			}
			return res
		}
	}

	// Before: the first candidate as torch builds it, no PCH (the harness's
	// build step does nothing with KEVOLVE_PCH=0; the worker reads it at start).
	t.Setenv("KEVOLVE_PCH", "0")
	plainCache := t.TempDir()
	plain := evalIn(plainCache)(pchCand(0))
	if _, ran := plain.StageS[StagePrepareBuild]; !ran {
		t.Errorf("the build step did not run for a load_inline candidate: stages %v", plain.StageS)
	}

	// After: three candidates one after another in one cache; the first pays
	// for the PCH.
	t.Setenv("KEVOLVE_PCH", "1")
	t.Setenv("KEVOLVE_PCH_DIR", "") // the cache's own pch/, empty: the first candidate pays for it
	cache := t.TempDir()
	ev := evalIn(cache)
	var rs []*EvalResult
	for i := range pchCands {
		rs = append(rs, ev(pchCand(i)))
	}
	cpu := func(r *EvalResult) float64 { return r.StageS["load_candidate_cpu"] }
	t.Logf("no PCH: load_candidate %.1f s (compilers' CPU %.1f s)", buildS(plain), cpu(plain))
	for i, r := range rs {
		t.Logf("candidate %d: build step %.1f s, load_candidate %.1f s (compilers' CPU %.1f s), build %.1f s", i+1,
			r.StageS[StagePrepareBuild], r.StageS["load_candidate"], cpu(r), buildS(r))
	}
	// Issue 22: each later build in at most 8 s, and (for a loaded machine)
	// at most a third of the first, measured here (the first pays for the
	// PCHs and the shared bindings). The PCH's and bindings' own effect is
	// also checked on the compilers' CPU seconds, which a loaded machine
	// inflates far less than wall time: at most half of the plain build's
	// (measured on this 2-core VM: 2.4-2.7 s against 21-27 s).
	//
	// The 8 s is an idle machine's: where the plain build itself took
	// over 24 s of wall (another test suite beside this one: 45 s), a
	// third of it stands in, as the build's own share of the machine.
	wallMax := max(8, buildS(plain)/3)
	for i, r := range rs[1:] {
		if b := buildS(r); b > wallMax || b > buildS(rs[0])/3 {
			t.Errorf("candidate %d built in %.1f s: want at most %.1f s and a third of the first (%.1f s; without the PCH %.1f s)",
				i+2, b, wallMax, buildS(rs[0]), buildS(plain))
		}
		if c := cpu(r); c <= 0 || c > cpu(plain)/2 {
			t.Errorf("candidate %d's build took %.1f s of compiler CPU: want at most half of the plain build's %.1f s",
				i+2, c, cpu(plain))
		}
	}

	// The candidate's build is in its job's folder, gone with the job: each
	// candidate printed its build.ninja (ninjaDump).
	ninja := func(r *EvalResult, ext string) string {
		t.Helper()
		for _, block := range strings.Split(r.Log, "NINJA-BEGIN ")[1:] {
			path, body, _ := strings.Cut(block, "\n")
			if strings.Contains(path, "/"+ext+"_kv") {
				body, _, _ = strings.Cut(body, "NINJA-END")
				return body
			}
		}
		t.Fatalf("no build.ninja of %s in the candidate's log:\n%s", ext, r.Log)
		return ""
	}
	// Each candidate's main.cpp: its own code on the precompiled
	// torch/types.h, and a table for the bindings the harness compiled once
	// for their shared signature (kevolve/_bindcache.py).
	for i := range pchCands {
		n := ninja(rs[i], fmt.Sprintf("axpb%d", i+1))
		if !strings.Contains(n, "-include") || !strings.Contains(n, "kevolve_torch_types.h") || !strings.Contains(n, "/bind-") {
			t.Errorf("candidate %d was not built on the precompiled torch/types.h with the shared bindings:\n%s", i+1, n)
		}
	}
	if n := ninja(plain, "axpb1"); strings.Contains(n, "kevolve_torch") || strings.Contains(n, "/bind-") {
		t.Errorf("KEVOLVE_PCH=0 still used a precompiled header or shared bindings:\n%s", n)
	}
	gchs, _ := filepath.Glob(filepath.Join(cache, "kernels", "pch", "*", "*.gch"))
	binds, _ := filepath.Glob(filepath.Join(cache, "kernels", "pch", "*", "bind-*.o"))
	if len(gchs) != 2 || len(binds) != 1 {
		t.Errorf("want two precompiled headers (torch/extension.h, torch/types.h) and one bindings object for one flag set and one signature, got %v and %v", gchs, binds)
	}
	sameOutputs(t, plain, rs[0])
}

// sameOutputs checks that the first candidate's extension, as built with
// and without the PCH and the shared bindings, computes the same outputs
// (and the right ones), with the same docstring and the same argument
// error: each candidate printed them from its own process (behaviourDump;
// its build went with its job's folder).
func sameOutputs(t *testing.T, plain, pch *EvalResult) {
	t.Helper()
	line := func(r *EvalResult) string {
		for _, l := range strings.Split(r.Log, "\n") {
			if strings.HasPrefix(l, "BEHAVIOUR ") {
				return l
			}
		}
		t.Fatalf("no BEHAVIOUR line in the candidate's log:\n%s", r.Log)
		return ""
	}
	a, b := line(plain), line(pch)
	if a != b {
		t.Errorf("the builds with and without the PCH differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, " right ") {
		t.Errorf("the build computes the wrong outputs: %s", a)
	}
}

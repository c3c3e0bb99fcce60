package harness

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// candNormalize is an honest candidate for ref_normalize.py.
const candNormalize = `
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.rsqrt((x * x).sum(dim=1, keepdim=True).clamp_min(1e-24))
`

// reuseEvaluator reuses children on every target, the CPU included, so the
// mechanism GPU evaluations use by default runs here for real.
func reuseEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	ev, err := NewEvaluator(EvalConfig{Python: testPython(t), CacheDir: t.TempDir(), Reuse: ReuseAll,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return ev
}

// evalNormalize evaluates a candidate for ref_normalize.py; the checks only
// unless timed (a child's reuse does not depend on the timing).
func evalNormalize(t *testing.T, ev *Evaluator, cand string, timed bool) *EvalResult {
	t.Helper()
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
		Candidate: Source{Code: cand}, Target: "cpu", Timeout: 150 * time.Second, SkipTiming: !timed}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Process == nil {
		t.Fatalf("no process report with reuse on\n%s", dump(res))
	}
	return res
}

// A clean evaluation leaves its child for the next; one that changed what
// the next evaluation would run on (a patched torch function, a global
// module hook, a torch setting) does not, and still gets its own verdict.
func TestReuseKeepsOnlyCleanChildren(t *testing.T) {
	ev := reuseEvaluator(t)
	first := evalNormalize(t, ev, candNormalize, true)
	second := evalNormalize(t, ev, candNormalize+"\n# another candidate\n", true)
	if first.Verdict != VerdictPass || second.Verdict != VerdictPass {
		t.Fatalf("honest candidates: %s, %s\n%s", first.Verdict, second.Verdict, dump(first))
	}
	if !first.Process.Kept || second.Process.Job < 2 {
		t.Fatalf("the second honest evaluation did not reuse the first's child: %+v then %+v", *first.Process, *second.Process)
	}
	// Changes to what a reference runs on are integrity violations of the
	// candidate's own evaluation (reference_tampered) as well; the rest are
	// harmless to it. Either way the child goes.
	tainting := []struct{ name, code, why, verdict string }{
		{"patched_torch_function", "import torch.nn.functional as F\nF.gelu = lambda x, approximate='none': x\n", "verdict integrity_violation", VerdictIntegrityViolation},
		{"patched_tensor_method", "import torch\n_add = torch.Tensor.add\ntorch.Tensor.add = lambda *a, **k: _add(*a, **k)\n", "verdict integrity_violation", VerdictIntegrityViolation},
		{"global_module_hook", "import torch\ntorch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)\n", "verdict integrity_violation", VerdictIntegrityViolation},
		{"torch_setting", "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_default_dtype(torch.float32)\ntorch.set_num_threads(1)\n", "verdict integrity_violation", VerdictIntegrityViolation},
		{"environment", "import os\nos.environ['KEVOLVE_TAINT_TEST'] = '1'\n", "environ", VerdictPass},
		{"aten_kernel_override", "import sys, torch\n_lib = torch.library.Library('aten', 'IMPL')\n_lib.impl('gelu', lambda x, approximate='none': x, 'CPU')\nsys._kv_keep = _lib\n", "verdict integrity_violation", VerdictIntegrityViolation},
		// A thread started outside Python (as a C++ extension's std::thread is): libc's sleep(3600) as its body.
		{"native_thread", "import ctypes\n_libc = ctypes.CDLL(None)\n_tid = ctypes.c_ulong()\n" +
			"_libc.pthread_create(ctypes.byref(_tid), None, ctypes.cast(_libc.sleep, ctypes.c_void_p), ctypes.c_void_p(3600))\n", "native threads", VerdictPass},
		{"stdout_replaced", "import sys\nclass W:\n    def __init__(self, f): self.f = f\n    def write(self, s): return self.f.write(s)\n    def flush(self): self.f.flush()\nsys.stdout = W(sys.stdout)\n", "sys_hooks", VerdictPass},
		// A harness function's code swapped in place (the object stays: identity alone would not see it).
		{"code_swapped", "import sys\ndef _f(*a, **k):\n    return None\nsys.modules['evaluate.warm'].warm_host.__code__ = _f.__code__\n", "replaced evaluate.warm.warm_host", VerdictPass},
		{"import_hook", "import sys\nclass F:\n    def find_spec(self, *a):\n        return None\nsys.meta_path.insert(0, F())\n", "import_hooks", VerdictPass},
	}
	for _, tc := range tainting {
		t.Run(tc.name, func(t *testing.T) {
			// A clean child first, so the tainting candidate runs in a reused one.
			evalNormalize(t, ev, candNormalize+"\n# before "+tc.name+"\n", false)
			res := evalNormalize(t, ev, tc.code+candNormalize, false)
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s\n%s", res.Verdict, tc.verdict, dump(res))
			}
			if _, ok := failedCheck(res, "reference_tampered"); ok != (tc.verdict == VerdictIntegrityViolation) {
				t.Fatalf("reference_tampered failed: %v\n%s", ok, dump(res))
			}
			if res.Process.Job < 2 {
				t.Errorf("ran in a fresh child (%+v): the case did not exercise a reused one", *res.Process)
			}
			if res.Process.Kept || !strings.Contains(res.Process.Why, tc.why) {
				t.Fatalf("child kept=%v why=%q, want it dropped for %q", res.Process.Kept, res.Process.Why, tc.why)
			}
			next := evalNormalize(t, ev, candNormalize+"\n# after "+tc.name+"\n", false)
			if next.Process.Job != 1 {
				t.Fatalf("the evaluation after a tainting one ran in a reused child: %+v", *next.Process)
			}
		})
	}
}

// Every hostile candidate gets the same verdict in a reused child as in a
// fresh one: what the checks catch does not depend on the process's past.
func TestReuseHostileCandidatesInReusedChild(t *testing.T) {
	ev := reuseEvaluator(t)
	for _, tc := range hostileCases {
		if tc.gpuOnly {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			before := evalNormalize(t, ev, candNormalize+"\n# before "+tc.name+"\n", false)
			if !before.Process.Kept {
				t.Fatalf("the honest evaluation's child was not kept: %+v", *before.Process)
			}
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, tc.ref)},
				Candidate: Source{Code: tc.candidateSource(t)}, Target: "cpu", Timeout: 150 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %q in a reused child, want %q\n%s", res.Verdict, tc.want, dump(res))
			}
			if _, ok := failedCheck(res, tc.check); !ok {
				t.Fatalf("no failed check %q\n%s", tc.check, dump(res))
			}
			if !tc.harnessReports() {
				return // the process ended under the candidate: nothing to keep
			}
			if res.Process == nil || res.Process.Job < 2 || res.Process.Kept {
				t.Fatalf("process %+v: want a reused child, not kept after a hostile verdict", res.Process)
			}
		})
	}
}

// Two load_inline extensions of the same name and different sources, one
// after the other in a kept child: the second must run its own code (a
// process that kept the first module under that name would pass it).
func TestReuseLoadInlineSameNameOtherSource(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU extension; the GPU runs the CUDA ones in the benchmark")
	}
	ev := reuseEvaluator(t)
	eval := func(cand string) *EvalResult {
		t.Helper()
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: inlineRef}, Candidate: Source{Code: cand},
			Target: "cpu", SkipTiming: true, Trials: 2, Timeout: 170 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := eval(inlineCand)
	if first.Verdict != VerdictPass || first.Process == nil {
		t.Fatalf("first extension: %s %+v\n%s", first.Verdict, first.Process, first.Log)
	}
	wrong := eval(strings.Replace(inlineCand, "2.0f * pa[i]", "3.0f * pa[i]", 1))
	t.Logf("first: %+v; second: %+v", *first.Process, wrong.Process)
	if wrong.Verdict != VerdictIncorrect {
		t.Fatalf("an extension named like the one before it, computing 3a+b, got %s (want incorrect)\n%s", wrong.Verdict, dump(wrong))
	}
	if first.Process.Kept && (wrong.Process == nil || wrong.Process.Job < 2) {
		if jailed(first) {
			// Open (issue 30's notes): in the jail, a CPU child that built a
			// load_inline extension says it is kept, yet the next job of its
			// key runs in a fresh child. CPU children are not reused by
			// default (ReuseGPU); GPU jobs run outside the PID namespace.
			t.Logf("the first child was kept but the second evaluation did not run in it (the jail's known gap): %+v", wrong.Process)
			return
		}
		t.Errorf("the first child was kept but the second evaluation did not run in it: %+v", wrong.Process)
	}
}

// KEVOLVE_FRESH_PROCESS=1 turns reuse off unless the config asks for it.
func TestFreshProcessEnv(t *testing.T) {
	t.Setenv("KEVOLVE_FRESH_PROCESS", "1")
	for _, tc := range []struct{ in, want ReusePolicy }{{ReuseGPU, ReuseNever}, {ReuseAll, ReuseAll}} {
		ev, err := NewEvaluator(EvalConfig{Python: testPython(t), CacheDir: t.TempDir(), Reuse: tc.in})
		if err != nil {
			t.Fatal(err)
		}
		if ev.cfg.Reuse != tc.want {
			t.Errorf("Reuse %v with KEVOLVE_FRESH_PROCESS=1: got %v, want %v", tc.in, ev.cfg.Reuse, tc.want)
		}
		ev.Close()
	}
}

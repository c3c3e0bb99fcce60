package harness

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// KernelBench-style candidates build with torch.utils.cpp_extension.
// load_inline: slow the first time, so builds are cached by source hash
// across processes. A C++ (CPU) extension exercises the same path without
// nvcc; on the GPU machine the CUDA variant runs in the benchmark.
const inlineRef = `import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return a * 2.0 + b
def get_inputs():
    return [torch.randn(1024, 256), torch.randn(1024, 256)]
def get_init_inputs():
    return []
`

const inlineCand = `import torch
from torch.utils.cpp_extension import load_inline

_src = r"""
torch::Tensor axpb(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = 2.0f * pa[i] + pb[i];
    return out;
}
"""
_ext = load_inline(name="axpb", cpp_sources=_src, functions=["axpb"])

class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return _ext.axpb(a.contiguous(), b.contiguous())
`

func TestLoadInlineBuildIsCachedAcrossWorkers(t *testing.T) {
	if gpuMode() {
		t.Skip("the CUDA load_inline path is measured by the benchmark on the GPU machine")
	}
	py := testPython(t)
	cache := t.TempDir()
	newEv := func() *Evaluator {
		ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ev.Close() })
		return ev
	}
	eval := func(ev *Evaluator, cand string) *EvalResult {
		t.Helper()
		res, err := ev.Evaluate(context.Background(), EvalRequest{Reference: Source{Code: inlineRef}, Candidate: Source{Code: cand},
			Target: "cpu", SkipTiming: true, Trials: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	cold := eval(newEv(), inlineCand)
	if cold.Verdict != VerdictPass {
		t.Fatalf("cold build: %s\n%s", cold.Verdict, cold.Log)
	}
	// A fresh worker (a new process, as after a server restart) finds the
	// build in the cache instead of compiling again.
	warm := eval(newEv(), inlineCand)
	if warm.Verdict != VerdictPass {
		t.Fatalf("cached build: %s\n%s", warm.Verdict, warm.Log)
	}
	t.Logf("load_candidate: cold %.2f s, cached %.2f s", cold.StageS["load_candidate"], warm.StageS["load_candidate"])
	if warm.StageS["load_candidate"] > 2 || warm.StageS["load_candidate"] > cold.StageS["load_candidate"]/3 {
		t.Errorf("the cached build was not reused: load %.2f s cold, %.2f s after", cold.StageS["load_candidate"], warm.StageS["load_candidate"])
	}

	broken := strings.Replace(inlineCand, "auto out = torch::empty_like(a);", "auto out = torch::empty_like(a)", 1)
	bad := eval(newEv(), broken)
	if bad.Verdict != VerdictCompileError || bad.Stage != "load_candidate" || !strings.Contains(checksText(bad), "compiler errors:") || !strings.Contains(checksText(bad), "error: expected") {
		t.Fatalf("a C++ syntax error gave %s at %s:\n%s", bad.Verdict, bad.Stage, bad.Log)
	}
}

func checksText(r *EvalResult) string {
	var b strings.Builder
	for _, c := range r.Checks {
		b.WriteString(c.Name + ": " + c.Detail + "\n")
	}
	return b.String()
}

package harness

// The build benchmark of issue 22: one table, per candidate kind (fast
// loader, Triton, load_inline C++, load_inline CUDA on a GPU) and per case
// (cold: empty caches; same: the same source again; new: a never-seen
// source with the caches warm, as in a search), the seconds of each stage
// of the evaluation (stage_s, prepare_build included) and its wall.
//
//	KEVOLVE_BENCH=1 go test -tags sqlite_fts5 -run TestBenchBuildStages -v ./harness   # CPU, here
//	KEVOLVE_BENCH=1 KEVOLVE_GPU=1 .../harness.test -test.run TestBenchBuildStages -test.v  # GPU
//
// The GPU side by side with KernelBench's eval_kernel_against_ref on the
// same candidates is TestBenchKernelBench (make bench-run), whose table now
// ends with the same stage breakdown per flavor.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// loadInlineNormalize is refNormalize's kernel as a C++ load_inline candidate.
const loadInlineNormalize = `
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r"""
torch::Tensor rownorm(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) s += (double)px[r * cols + c] * px[r * cols + c];
        float n = (float)std::sqrt(s);
        if (n < 1e-12f) n = 1e-12f;
        for (int64_t c = 0; c < cols; ++c) py[r * cols + c] = px[r * cols + c] / n;
    }
    return y;
}
"""
ext = load_inline(name="rownorm", cpp_sources=SRC, functions=["rownorm"])

class ModelNew(nn.Module):
    def forward(self, x):
        return ext.rownorm(x.contiguous())
`

// loadInlineCUDANormalize is the same as a CUDA load_inline candidate.
const loadInlineCUDANormalize = `
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CU = r"""
#include <torch/extension.h>
__global__ void rownorm_k(const float* x, float* y, long long cols) {
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    __shared__ float part[256];
    float s = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c] * xr[c];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    const float n = fmaxf(sqrtf(part[0]), 1e-12f);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = xr[c] / n;
}
torch::Tensor rownorm(torch::Tensor x) {
    auto y = torch::empty_like(x);
    rownorm_k<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""
ext = load_inline(name="rownorm_cu", cpp_sources="torch::Tensor rownorm(torch::Tensor x);",
                  cuda_sources=CU, functions=["rownorm"])

class ModelNew(nn.Module):
    def forward(self, x):
        return ext.rownorm(x.contiguous())
`

type buildBenchRow struct {
	Kind, Case string
	Verdict    string
	Stages     map[string]float64
	WallS      float64
}

func TestBenchBuildStages(t *testing.T) {
	if os.Getenv("KEVOLVE_BENCH") != "1" {
		t.Skip("a benchmark: KEVOLVE_BENCH=1 (KEVOLVE_GPU=1 adds load_inline CUDA and the GPU's fast loader)")
	}
	py := testPython(t)
	tgt := "cpu"
	kinds := []struct{ name, code string }{
		{"fast loader (load_c)", loadCNormalize}, {"Triton", tritonNormalize}, {"load_inline C++", loadInlineNormalize},
	}
	if gpuMode() {
		tgt = "nvidia"
		kinds = []struct{ name, code string }{
			{"fast loader (load_cuda)", loadCUDANormalize}, {"Triton", tritonNormalize},
			{"load_inline CUDA", loadInlineCUDANormalize},
		}
	}
	var rows []buildBenchRow
	for _, k := range kinds {
		// Each kind starts from empty caches (kernels, PCH, Triton's) and a
		// fresh worker, so "cold" is a first evaluation of its kind.
		cache := t.TempDir()
		t.Setenv("TRITON_CACHE_DIR", cache+"/triton")
		t.Setenv("KEVOLVE_PCH_DIR", "") // the cache's own pch/
		ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ev.WorkerInfo(context.Background()); err != nil { // the warm parent's start is not a build
			t.Fatal(err)
		}
		for _, c := range []struct{ name, code string }{
			{"cold", k.code}, {"same source", k.code},
			{"new source", strings.Replace(k.code, "import torch\n", "import torch  # a never-seen source\n", 1)},
		} {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize},
				Candidate: Source{Code: c.code}, Target: tgt, Timeout: 15 * time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, buildBenchRow{Kind: k.name, Case: c.name, Verdict: res.Verdict, Stages: res.StageS, WallS: res.WallS})
			t.Logf("%s, %s: %s %.2f s %v", k.name, c.name, res.Verdict, res.WallS, res.StageS)
		}
		ev.Close()
	}
	t.Log("\n" + buildBenchTable(tgt, rows))
	for _, r := range rows {
		if r.Verdict != VerdictPass {
			t.Errorf("%s, %s: %s", r.Kind, r.Case, r.Verdict)
		}
	}
}

// buildBenchTable prints the rows with one column per stage seen, in the
// order evaluations start them (the build first), the rest by name.
func buildBenchTable(target string, rows []buildBenchRow) string {
	seen := map[string]float64{}
	for _, r := range rows {
		for k, v := range r.Stages {
			seen[k] = max(seen[k], v)
		}
	}
	stages := make([]string, 0, len(seen))
	for k := range seen {
		stages = append(stages, k)
	}
	order := map[string]int{StagePrepareBuild: 1, "import": 2, "load_candidate": 3, "load_candidate_cpu": 4} // the rest after, by name
	rank := func(s string) int {
		if o, ok := order[s]; ok {
			return o
		}
		return len(order) + 1
	}
	sort.Slice(stages, func(i, j int) bool {
		oi, oj := rank(stages[i]), rank(stages[j])
		if oi != oj {
			return oi < oj
		}
		return stages[i] < stages[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "## Evaluation stages by candidate kind (%s), seconds\n\n| kind | case | %s | wall | verdict |\n|---|---|%s---|---|\n",
		target, strings.Join(stages, " | "), strings.Repeat("---|", len(stages)))
	for _, r := range rows {
		cells := make([]string, len(stages))
		for i, s := range stages {
			cells[i] = "-"
			if v, ok := r.Stages[s]; ok {
				cells[i] = fmt.Sprintf("%.2f", v)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %s |\n", r.Kind, r.Case, strings.Join(cells, " | "), r.WallS, r.Verdict)
	}
	return b.String()
}

func TestBuildBenchTable(t *testing.T) {
	got := buildBenchTable("cpu", []buildBenchRow{
		{Kind: "load_inline C++", Case: "cold", Verdict: "pass", WallS: 30, Stages: map[string]float64{"load_candidate": 9, StagePrepareBuild: 20, "correctness": 0.5}},
		{Kind: "Triton", Case: "cold", Verdict: "pass", WallS: 2, Stages: map[string]float64{"load_candidate": 1}},
	})
	for _, want := range []string{
		"| kind | case | prepare_build | load_candidate | correctness | wall | verdict |",
		"| load_inline C++ | cold | 20.00 | 9.00 | 0.50 | 30.00 | pass |",
		"| Triton | cold | - | 1.00 | - | 2.00 | pass |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

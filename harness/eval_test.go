package harness

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	_ "github.com/mattn/go-sqlite3"
)

// One Evaluator (one warm Python parent) serves every test: the parent's
// imports cost seconds, each evaluation a fork.
var (
	sharedOnce sync.Once
	sharedEv   *Evaluator
	sharedErr  error
)

func testPython(t *testing.T) string { return toolchaintest.Python(t) }

func gpuMode() bool { return os.Getenv("KEVOLVE_GPU") == "1" }

func testTarget() string {
	if gpuMode() {
		return "nvidia"
	}
	return "cpu"
}

func evaluator(t *testing.T) *Evaluator {
	t.Helper()
	py := testPython(t)
	sharedOnce.Do(func() {
		cache := os.Getenv("KEVOLVE_TEST_CACHE")
		if cache == "" {
			cache, sharedErr = os.MkdirTemp("", "kevolve-eval-test-")
			if sharedErr != nil {
				return
			}
		}
		sharedEv, sharedErr = NewEvaluator(EvalConfig{Python: py, CacheDir: cache,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	})
	if sharedErr != nil {
		t.Fatalf("NewEvaluator: %v", sharedErr)
	}
	return sharedEv
}

func TestMain(m *testing.M) {
	// One precompiled torch/extension.h for every load_inline test of the
	// run (each would build its own in its fresh cache); a test about the
	// PCH itself sets its own folder.
	pchDir := ""
	if os.Getenv("KEVOLVE_PCH_DIR") == "" {
		if d, err := os.MkdirTemp("", "kevolve-test-pch-"); err == nil {
			os.Setenv("KEVOLVE_PCH_DIR", d)
			pchDir = d
		}
	}
	code := m.Run()
	if sharedEv != nil {
		sharedEv.Close()
	}
	if pchDir != "" {
		os.RemoveAll(pchDir)
	}
	os.Exit(code)
}

const refNormalize = `
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return F.normalize(x, dim=1)

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
`

// candidate wraps a forward body into a ModelNew file.
func candidate(imports, body string) string {
	return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + imports +
		"\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.cache = None\n    def forward(self, x):\n" + body + "\n"
}

// The correct answer written without F.normalize.
const normBody = "        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)\n"

// withLinear gives a candidate the reference's weight: the same nn.Linear
// created first under the shared seed, as KernelBench candidates do.
func withLinear(c string) string {
	return strings.Replace(c, "self.cache = None", "self.cache = None\n        self.w = nn.Linear(256, 32, bias=False).weight", 1)
}

// Weights come from nn.Linear under the shared seed, as in KernelBench.
const refMatmulRelu = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(256, 32, bias=False).weight
    def forward(self, x):
        return torch.relu(torch.matmul(x, self.w.t()))

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
`

const refTiny = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.tanh(x) * 1e-6

def get_inputs():
    return [torch.randn(128, 128)]

def get_init_inputs():
    return []
`

const tritonNormalize = `
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def row_normalize(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    s = tl.sqrt(tl.sum(x * x, axis=0))
    s = tl.maximum(s, 1e-12)
    tl.store(y_ptr + row * n_cols + offs, x / s, mask=mask)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        row_normalize[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
`

const loadCNormalize = `
import torch
import torch.nn as nn
from kevolve import load_c

SRC = r"""
#include <stdint.h>
#include <math.h>
void rownorm(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) s += (double)x[r * cols + c] * x[r * cols + c];
        float n = (float)sqrt(s);
        if (n < 1e-12f) n = 1e-12f;
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] / n;
    }
}
"""
lib = load_c(SRC)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.rownorm(x, y, x.shape[0], x.shape[1])
        return y
`

// One block per row; a shared-memory tree reduction of the squares.
const loadCUDANormalize = `
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r"""
extern "C" __global__ void rownorm(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    __shared__ float part[256];
    long r = blockIdx.x;
    float s = 0.f;
    for (long c = threadIdx.x; c < cols; c += blockDim.x) { float v = x[r * cols + c]; s += v * v; }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    float n = fmaxf(sqrtf(part[0]), 1e-12f);
    for (long c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = x[r * cols + c] / n;
}
"""
k = load_cuda(SRC)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        k.rownorm(x, y, x.shape[0], x.shape[1], grid=(x.shape[0],), block=(256,))
        return y
`

// A kernel that never finishes: only the deadline can end it.
const loadCUDASpin = `
import torch
import torch.nn as nn
from kevolve import load_cuda

k = load_cuda(r"""
extern "C" __global__ void spin(int* flag) {
    while (atomicAdd(flag, 0) == 0) { }
}
""")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        k.spin(flag, grid=(1,), block=(1,))
        torch.cuda.synchronize()
        return x
`

type evalCase struct {
	name      string
	ref       string
	cand      string
	timeout   time.Duration
	want      string
	wantCheck string // a check that must be present and failed (for non-pass verdicts)
	wantWarn  string
	gpuOnly   bool
	cpuOnly   bool
	timing    bool // run the timing stage too (off: correctness and integrity only)
}

func evalCases() []evalCase {
	return []evalCase{
		{name: "correct_torch_ops", ref: refNormalize, cand: candidate("", normBody+"        return x / n"),
			want: VerdictPass, wantWarn: "no custom kernel"},
		{name: "wrong", ref: refNormalize, cand: candidate("", "        return x / x.abs().sum(dim=1, keepdim=True)"),
			want: VerdictIncorrect, wantCheck: "allclose"},
		{name: "syntax_error", ref: refNormalize, cand: candidate("", "        return x +* 2"),
			want: VerdictCompileError, wantCheck: "load_candidate"},
		{name: "import_error", ref: refNormalize, cand: candidate("import no_such_module_kevolve", "        return x"),
			want: VerdictCompileError, wantCheck: "load_candidate"},
		{name: "runtime_error", ref: refNormalize, cand: candidate("", "        raise ValueError('boom')"),
			want: VerdictRuntimeError, wantCheck: "run_candidate"},
		{name: "hanging", ref: refNormalize, cand: candidate("", "        while True:\n            pass"),
			timeout: 6 * time.Second, want: VerdictTimeout, wantCheck: "deadline"},
		{name: "sleeping", ref: refNormalize, cand: candidate("import time", "        time.sleep(3600)"),
			timeout: 6 * time.Second, want: VerdictTimeout, wantCheck: "deadline"},
		{name: "segfault", ref: refNormalize, cand: candidate("import ctypes", "        ctypes.string_at(0)\n        return x"),
			want: VerdictCrash, wantCheck: "process"},
		{name: "abort", ref: refNormalize, cand: candidate("import os", "        os.abort()"),
			want: VerdictCrash, wantCheck: "process"},
		{name: "input_mutating", ref: refNormalize, cand: candidate("", normBody+"        x.div_(n)\n        return x.clone()"),
			want: VerdictIntegrityViolation, wantCheck: "input_mutation"},
		{name: "output_alias", ref: refNormalize, cand: candidate("", normBody+"        return x.div_(n)"),
			want: VerdictIntegrityViolation, wantCheck: "input_mutation"},
		// Glue the reference also uses (relu after its matmul) is allowed; its main op is not.
		{name: "reference_glue_allowed", ref: refMatmulRelu, cand: withLinear(candidate("", "        y = (x.unsqueeze(2) * self.w.t().unsqueeze(0)).sum(1)\n        return torch.relu(y)")),
			want: VerdictPass},
		{name: "reference_main_op_called", ref: refMatmulRelu, cand: withLinear(candidate("", "        return torch.relu(torch.matmul(x, self.w.t()))")),
			want: VerdictIntegrityViolation, wantCheck: "reference_ops"},
		{name: "reference_calling", ref: refNormalize, cand: candidate("", "        return F.normalize(x, dim=1)"),
			want: VerdictIntegrityViolation, wantCheck: "reference_ops"},
		{name: "memoizing", ref: refNormalize, cand: candidate("", normBody+"        if self.cache is None:\n            self.cache = x / n\n        return self.cache.clone()"),
			want: VerdictIntegrityViolation, wantCheck: "memoization"},
		{name: "nan", ref: refNormalize, cand: candidate("", normBody+"        y = x / n\n        y[3, 7] = float('nan')\n        return y"),
			want: VerdictIncorrect, wantCheck: "finite"},
		{name: "unwritten_output", ref: refNormalize, cand: candidate("", normBody+"        y = torch.empty_like(x)\n        y[:32] = (x / n)[:32]\n        return y"),
			want: VerdictIncorrect, wantCheck: "finite"},
		{name: "near_zero_faking", ref: refTiny, cand: candidate("", "        return torch.zeros_like(x)"),
			want: VerdictIncorrect, wantCheck: "relative_norm"},
		{name: "near_zero_correct", ref: refTiny, cand: candidate("", "        return (torch.exp(2 * x) - 1) / (torch.exp(2 * x) + 1) * 1e-6"),
			want: VerdictPass},
		{name: "wrong_shape", ref: refNormalize, cand: candidate("", normBody+"        return (x / n).t().contiguous()"),
			want: VerdictIncorrect, wantCheck: "shape"},
		// Another dense layout (transposed) holds the right values: passes
		// with a note since issue 20 (TestFidelityLayouts has the cases).
		{name: "non_contiguous", ref: refNormalize, cand: candidate("", normBody+"        return (x / n).t().contiguous().t()"),
			want: VerdictPass},
		{name: "tensor_subclass", ref: refNormalize, cand: candidate("class Lazy(torch.Tensor):\n    pass\n", normBody+"        return (x / n).as_subclass(Lazy)"),
			want: VerdictIntegrityViolation, wantCheck: "output_type"},
		{name: "side_thread", ref: refNormalize, cand: candidate("import threading, time", normBody+"        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n        return x / n"),
			want: VerdictIntegrityViolation, wantCheck: "threads"},
		{name: "triton", ref: refNormalize, cand: tritonNormalize, want: VerdictPass},
		{name: "load_c", ref: refNormalize, cand: loadCNormalize, want: VerdictPass, cpuOnly: true},
		{name: "load_c_compile_error", ref: refNormalize, cand: strings.Replace(loadCNormalize, "double s = 0;", "double s = 0", 1),
			want: VerdictCompileError, wantCheck: "load_candidate", cpuOnly: true},
		{name: "load_cuda", ref: refNormalize, cand: loadCUDANormalize, want: VerdictPass, gpuOnly: true},
		{name: "load_cuda_illegal_address", ref: refNormalize, cand: strings.Replace(loadCUDANormalize, "y[r * cols + c] = x[r * cols + c] / n;", "y[r * cols + c + (1L << 40)] = 0.f;", 1),
			want: VerdictRuntimeError, wantCheck: "run_candidate", gpuOnly: true},
		{name: "load_cuda_spinning_kernel", ref: refNormalize, cand: loadCUDASpin, timeout: 15 * time.Second,
			want: VerdictTimeout, wantCheck: "deadline", gpuOnly: true},
		{name: "side_stream_work", ref: refNormalize, cand: candidate("", normBody+`        if self.cache is None:
            self.cache = (torch.cuda.Stream(), torch.randn(4096, 4096, device=x.device))
        s, big = self.cache
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            torch.mm(big, big)
            y = x / n
        return y`), want: VerdictIntegrityViolation, gpuOnly: true, timing: true}, // caught by an audit or by stream_work, whichever sees it first
	}
}

func TestEvaluateVerdicts(t *testing.T) {
	ev := evaluator(t)
	ctx := context.Background()
	info, err := ev.WorkerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker: %v", info)
	for _, tc := range evalCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gpuOnly && !gpuMode() || tc.cpuOnly && gpuMode() {
				t.Skip("not for this target")
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 120 * time.Second
			}
			t0 := time.Now()
			res, err := ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: tc.cand},
				Target: testTarget(), Timeout: timeout, SkipTiming: !tc.timing}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			wall := time.Since(t0)
			t.Logf("verdict=%s stage=%s wall=%.2fs stages=%v warnings=%v", res.Verdict, res.Stage, wall.Seconds(), res.StageS, res.Warnings)
			if res.Verdict != tc.want {
				b, _ := json.MarshalIndent(res, "", "  ")
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, b)
			}
			if res.Correct != (tc.want == VerdictPass) {
				t.Errorf("correct=%v with verdict %s", res.Correct, res.Verdict)
			}
			if tc.wantCheck != "" {
				found := false
				for _, c := range res.Checks {
					if c.Name == tc.wantCheck && !c.Passed {
						found = true
						t.Logf("check %s: %s", c.Name, firstLine(c.Detail))
					}
				}
				if !found {
					b, _ := json.MarshalIndent(res.Checks, "", "  ")
					t.Errorf("no failed check %q in %s", tc.wantCheck, b)
				}
			}
			if tc.want == VerdictPass {
				for _, c := range res.Checks {
					if !c.Passed {
						t.Errorf("pass with failed check %+v", c)
					}
				}
			}
			if tc.wantWarn != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.wantWarn) {
				t.Errorf("warnings %q lack %q", res.Warnings, tc.wantWarn)
			}
			if tc.want == VerdictTimeout && wall > timeout+loadGranted(res)+5*time.Second {
				t.Errorf("timeout verdict after %s, deadline was %s (+%s for the host's load)", wall, timeout, loadGranted(res))
			}
			if res.HarnessVersion == "" || res.Target != testTarget() || res.Device == "" {
				t.Errorf("result lacks target/device/version: %+v", res)
			}
		})
	}
	// The worker survived everything above: a correct candidate still passes.
	res, err := ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Code: candidate("", normBody+"        return x / n")},
		Target: testTarget(), SkipTiming: true, Seed: 7}, nil)
	if err != nil || res.Verdict != VerdictPass {
		t.Fatalf("after the suite: %v %+v", err, res)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func TestEvaluateTiming(t *testing.T) {
	ev := evaluator(t)
	var stages []string
	var mu sync.Mutex
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize},
		Candidate: Source{Code: candidate("", normBody+"        return x / n")}, Target: testTarget(), Trials: 3, Seed: 3},
		func(stage string, done, total int) {
			mu.Lock()
			stages = append(stages, stage)
			mu.Unlock()
		})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s: %+v", res.Verdict, res.Checks)
	}
	for name, s := range map[string]*Stats{"candidate": res.Candidate, "ref_eager": res.RefEager} {
		if s == nil || s.MedianS <= 0 || s.Iters < 10 || s.P10S > s.MedianS || s.MedianS > s.P90S {
			t.Fatalf("%s stats implausible: %+v", name, s)
		}
		t.Logf("%s: median %.3g s p10 %.3g p90 %.3g cv %.3f iters %d", name, s.MedianS, s.P10S, s.P90S, s.CV, s.Iters)
	}
	if res.SpeedupVsEager == nil || *res.SpeedupVsEager <= 0 {
		t.Fatalf("no speedup_vs_eager: %+v", res)
	}
	// The host's load over the candidate's timing comes through, and the
	// speedups are judged by it (noise.go).
	if n := res.Noise; n == nil || res.Candidate.Host == nil || n.WaitShare != res.Candidate.Host.WaitShare || n.CandidateCV != res.Candidate.CV || res.Candidate.Host.CPUs < 1 {
		t.Fatalf("noise %+v, candidate host load %+v", res.Noise, res.Candidate.Host)
	}
	t.Logf("noise %+v, host %+v", *res.Noise, *res.Candidate.Host)
	if gpuMode() && res.RefCompile != nil {
		t.Logf("ref_compile median %.3g s, speedup_vs_compile %.3f", res.RefCompile.MedianS, *res.SpeedupVsCompile)
	}
	t.Logf("speedup_vs_eager %.3f wall %.2f s stages %v", *res.SpeedupVsEager, res.WallS, stages)
	if len(stages) == 0 || stages[len(stages)-1] == "" {
		t.Errorf("no progress stages reported")
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"verdict":"pass"`, `"speedup_vs_eager":`, `"median_s":`, `"checks":[`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

func TestEvaluateSOL(t *testing.T) {
	ev := evaluator(t)
	// A speed of light of one hour: every real run is "faster than light".
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize},
		Candidate: Source{Code: candidate("", normBody+"        return x / n")}, Target: testTarget(), Trials: 2,
		SOLSeconds: 3600}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictIntegrityViolation {
		t.Fatalf("verdict %s, want integrity_violation (faster_than_sol)", res.Verdict)
	}
}

func TestEvaluateHarnessErrors(t *testing.T) {
	ev := evaluator(t)
	ctx := context.Background()
	good := Source{Code: candidate("", normBody+"        return x / n")}
	cases := []struct {
		name string
		req  EvalRequest
		want string
	}{
		{"missing_reference_file", EvalRequest{Reference: Source{Path: "/nonexistent/ref.py"}, Candidate: good, Target: "cpu"}, "no such file"},
		{"missing_candidate_file", EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Path: "/nonexistent/c.py"}, Target: "cpu"}, "no such file"},
		{"empty_candidate", EvalRequest{Reference: Source{Code: refNormalize}, Target: "cpu"}, "no path or code"},
		{"bad_target", EvalRequest{Reference: Source{Code: refNormalize}, Candidate: good, Target: "tpu"}, "unknown target"},
		{"bad_tolerance_rule", EvalRequest{Reference: Source{Code: refNormalize}, Candidate: good, Target: "cpu", ToleranceRule: "kernelbench-v9"}, "tolerance_rule"},
		// A broken reference is a verdict now (reference_error): see TestReferenceErrors.
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ev.EvaluateRequest(ctx, tc.req, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Files on disk, the SQLite cache, and a candidate importing a helper module
// from its own directory.
func TestEvaluateFilesAndCache(t *testing.T) {
	py := testPython(t)
	dir := t.TempDir()
	db, err := sql.Open("sqlite3", filepath.Join(dir, "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: filepath.Join(dir, "cache"), DB: db,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "ref.py"), []byte(refNormalize), 0o644))
	must(os.WriteFile(filepath.Join(dir, "helper_norm.py"), []byte("def norm(x):\n    return (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "cand.py"), []byte(candidate("from helper_norm import norm", "        return x / norm(x)")), 0o644))
	req := EvalRequest{Reference: Source{Path: filepath.Join(dir, "ref.py")}, Candidate: Source{Path: filepath.Join(dir, "cand.py")},
		Target: testTarget(), SkipTiming: true}
	r1, err := ev.EvaluateRequest(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Verdict != VerdictPass || r1.Cached {
		t.Fatalf("first: %+v", r1)
	}
	r2, err := ev.EvaluateRequest(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Cached || r2.Verdict != VerdictPass {
		t.Fatalf("second evaluation not served from the cache: %+v", r2)
	}
	req.Seed = 9 // a different request is a different key
	r3, err := ev.EvaluateRequest(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Cached {
		t.Fatalf("a different seed hit the cache")
	}
	var n int
	must(db.QueryRow(`SELECT count(*) FROM eval_cache`).Scan(&n))
	if n != 2 {
		t.Fatalf("eval_cache rows = %d, want 2", n)
	}
	retimeMeasuresAgain(t, ev, req)
}

// retimeMeasuresAgain: a timed request answered from the cache keeps the
// time it was measured; with Retime it is measured again (a new time and
// timing record), and the fresh result is what the cache answers next.
func retimeMeasuresAgain(t *testing.T, ev *Evaluator, req EvalRequest) {
	req.SkipTiming, req.Seed = false, 0
	get := func(retime bool) *EvalResult {
		t.Helper()
		req.Retime = retime
		r, err := ev.EvaluateRequest(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != VerdictPass || r.Candidate == nil || r.MeasuredAt == "" {
			t.Fatalf("retime=%v: %+v", retime, r)
		}
		return r
	}
	first, cached := get(false), get(false)
	if !cached.Cached || cached.MeasuredAt != first.MeasuredAt || !reflect.DeepEqual(cached.Candidate, first.Candidate) {
		t.Fatalf("not answered from the cache: %+v", cached)
	}
	fresh := get(true)
	if fresh.Cached || fresh.MeasuredAt <= first.MeasuredAt {
		t.Fatalf("--retime served %q measured at %s (first %s)", map[bool]string{true: "a cached result", false: "a result"}[fresh.Cached], fresh.MeasuredAt, first.MeasuredAt)
	}
	if after := get(false); !after.Cached || after.MeasuredAt != fresh.MeasuredAt {
		t.Fatalf("the cache still answers the old measurement (%s, fresh %s)", after.MeasuredAt, fresh.MeasuredAt)
	}
	var b strings.Builder
	if err := WriteTable(&b, fresh); err != nil {
		t.Fatal(err)
	}
	// The CPU does not time torch.compile: the figure is absent, not 0.
	if fresh.RefCompile == nil && (fresh.Fitness.SpeedupVsCompile != nil || strings.Contains(b.String(), "over torch.compile")) {
		t.Errorf("an unmeasured torch.compile speedup is shown:\n%s", b.String())
	}
}

// Timing repeatability on the GPU: a memory-bound row normalization of
// 8192x8192 fp32 (256 MiB in, 256 MiB out), evaluated three times.
func TestEvaluateGPUBench(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	ref := strings.Replace(refNormalize, "torch.randn(64, 256)", "torch.randn(8192, 8192)", 1)
	for _, c := range []struct{ name, cand string }{{"load_cuda", loadCUDANormalize}, {"triton", strings.Replace(tritonNormalize, "BLOCK=triton.next_power_of_2(x.shape[1])", "BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=16", 1)}} {
		for i := 0; i < 3; i++ {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: ref}, Candidate: Source{Code: c.cand},
				Target: "nvidia", Seed: int64(100 + i)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != VerdictPass {
				b, _ := json.MarshalIndent(res, "", "  ")
				t.Fatalf("%s: %s", c.name, b)
			}
			cs, rs := res.Candidate, res.RefEager
			line := fmt.Sprintf("%s run %d: wall %.2fs stages %v | cand median %.1fus p10 %.1f p90 %.1f cv %.4f iters %d | eager median %.1fus cv %.4f iters %d | speedup_vs_eager %.3f",
				c.name, i, res.WallS, res.StageS, cs.MedianS*1e6, cs.P10S*1e6, cs.P90S*1e6, cs.CV, cs.Iters, rs.MedianS*1e6, rs.CV, rs.Iters, *res.SpeedupVsEager)
			if res.RefCompile != nil {
				line += fmt.Sprintf(" | compile median %.1fus speedup_vs_compile %.3f", res.RefCompile.MedianS*1e6, *res.SpeedupVsCompile)
			}
			t.Log(line, " warnings:", res.Warnings)
		}
	}
}

// The MCP server runs tool calls concurrently: evaluations share one parent,
// each in its own child, and each gets its own verdict.
func TestEvaluateConcurrent(t *testing.T) {
	ev := evaluator(t)
	cands := map[string]string{
		VerdictPass:      candidate("", normBody+"        return x / n"),
		VerdictIncorrect: candidate("", "        return x * 2"),
		VerdictCrash:     candidate("import os", "        os.abort()"),
	}
	var wg sync.WaitGroup
	for want, cand := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Code: cand},
				Target: testTarget(), SkipTiming: true, Seed: 1234}, nil)
			if err != nil {
				t.Errorf("%s: %v", want, err)
				return
			}
			if res.Verdict != want {
				t.Errorf("verdict %s, want %s", res.Verdict, want)
			}
		}()
	}
	wg.Wait()
}

// Request fields reach the child: shape sets (KEVOLVE_SHAPES) and tolerances.
func TestEvaluateRequestOptions(t *testing.T) {
	ev := evaluator(t)
	refShapes := strings.Replace(refNormalize, "    return [torch.randn(64, 256)]",
		"    import os\n    if os.environ.get('KEVOLVE_SHAPES') == 'small':\n        return [torch.randn(8, 16)]\n    return [torch.randn(64, 256)]", 1)
	assertSmall := candidate("", "        assert x.shape == (8, 16), x.shape\n"+normBody+"        return x / n")
	slightlyOff := candidate("", normBody+"        return x / n * 1.002")
	cases := []struct {
		name string
		req  EvalRequest
		want string
	}{
		{"shapes_small", EvalRequest{Reference: Source{Code: refShapes}, Candidate: Source{Code: assertSmall}, Shapes: "small"}, VerdictPass},
		// With no shape set named, a CPU run takes the small set (the large
		// one fills a GPU); a GPU run takes the problem's default.
		{"shapes_default", EvalRequest{Reference: Source{Code: refShapes}, Candidate: Source{Code: assertSmall}}, map[bool]string{true: VerdictPass, false: VerdictRuntimeError}[testTarget() == "cpu"]},
		{"shapes_large", EvalRequest{Reference: Source{Code: refShapes}, Candidate: Source{Code: assertSmall}, Shapes: "large"}, VerdictRuntimeError},
		{"default_tolerance", EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Code: slightlyOff}}, VerdictIncorrect},
		{"loose_tolerance", EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Code: slightlyOff},
			Tolerance: &Tolerance{Atol: 1e-2, Rtol: 1e-2, RelNorm: 1e-2}}, VerdictPass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Target, tc.req.SkipTiming, tc.req.Trials = testTarget(), true, 2
			res, err := ev.EvaluateRequest(context.Background(), tc.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want {
				b, _ := json.MarshalIndent(res.Checks, "", "  ")
				t.Fatalf("verdict %s, want %s: %s", res.Verdict, tc.want, b)
			}
			// The result names the shape set that ran, so a SOL analysis
			// of it counts the same work.
			wantShapes := tc.req.Shapes
			if wantShapes == "" && testTarget() == "cpu" {
				wantShapes = "small"
			}
			if res.Shapes != wantShapes {
				t.Fatalf("result shapes %q, want %q", res.Shapes, wantShapes)
			}
		})
	}
}

// loadGranted reads the time a timed-out evaluation was granted for
// waiting on a CPU (the deadline check's detail says it).
func loadGranted(r *EvalResult) time.Duration {
	for _, c := range r.Checks {
		if m := regexp.MustCompile(`plus ([0-9.]+)s granted`).FindStringSubmatch(c.Detail); m != nil {
			s, _ := strconv.ParseFloat(m[1], 64)
			return time.Duration(s * float64(time.Second))
		}
	}
	return 0
}

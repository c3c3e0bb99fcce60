package compile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const cudaScale = `extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
`

const cudaWMMA = `#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void wmma16(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
`

const cudaFloat4 = `extern "C" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { float4 v = x[i]; v.x *= 2.f; y[i] = v; }
}
`

const cudaAsync = `#include <cuda_pipeline.h>
extern "C" __global__ void stage(const float4* __restrict__ x, float4* __restrict__ y) {
    __shared__ float4 buf[256];
    __pipeline_memcpy_async(&buf[threadIdx.x], &x[blockIdx.x * 256 + threadIdx.x], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    y[blockIdx.x * 256 + threadIdx.x] = buf[255 - threadIdx.x];
}
`

// A dynamically indexed per-thread array cannot live in registers: it goes
// to local memory (stack frame, LDL/STL).
const cudaLocal = `extern "C" __global__ void local(const int* idx, float* out, int n) {
    float a[256];
    for (int i = 0; i < n; ++i) a[i & 255] = i * out[i];
    out[threadIdx.x] = a[idx[threadIdx.x] & 255];
}
`

const cudaSyntaxError = `extern "C" __global__ void broken(float* y, int n) {
    int i = threadIdx.x;
    if (i < n) y[i] = undefined_name * 2.0f;
}
`

func TestCompileCUDA(t *testing.T) {
	needTool(t, "nvcc", "cuobjdump")
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	cases := []struct {
		name  string
		src   string
		check func(t *testing.T, r *Result)
	}{
		{"resources and sass", cudaScale, func(t *testing.T, r *Result) {
			if len(r.Kernels) != 1 || r.Kernels[0].Name != "scale" {
				t.Fatalf("kernels = %+v, want one named scale", r.Kernels)
			}
			k := r.Kernels[0]
			if k.Registers <= 0 || k.Registers > 64 {
				t.Errorf("registers = %d, want a small positive count", k.Registers)
			}
			if k.SASS == nil || k.SASS.Instructions == 0 || r.SASS.Classes["global_mem"] < 2 {
				t.Errorf("SASS summary = %+v, want instructions with global loads/stores", r.SASS)
			}
			if r.SASS.TensorCore || r.SASS.AsyncCopy {
				t.Errorf("a scalar kernel reported tensor-core %v / async copy %v", r.SASS.TensorCore, r.SASS.AsyncCopy)
			}
		}},
		{"wmma uses tensor cores", cudaWMMA, func(t *testing.T, r *Result) {
			if !r.SASS.TensorCore || len(r.SASS.TensorCoreOps) == 0 || !strings.HasPrefix(r.SASS.TensorCoreOps[0], "HMMA") {
				t.Errorf("tensor_core = %v ops %v, want HMMA", r.SASS.TensorCore, r.SASS.TensorCoreOps)
			}
		}},
		{"float4 gives 16-byte loads and stores", cudaFloat4, func(t *testing.T, r *Result) {
			if !r.SASS.Vector16Load || !r.SASS.Vector16Store {
				t.Errorf("vector16 load %v store %v, want both (top ops %v)", r.SASS.Vector16Load, r.SASS.Vector16Store, r.SASS.TopOpcodes)
			}
		}},
		{"cp.async is async copy", cudaAsync, func(t *testing.T, r *Result) {
			if !r.SASS.AsyncCopy || !slices.Contains(r.SASS.AsyncCopyOps, "LDGSTS") {
				t.Errorf("async_copy = %v ops %v, want LDGSTS", r.SASS.AsyncCopy, r.SASS.AsyncCopyOps)
			}
			if r.Kernels[0].SharedStaticBytes != 256*16 {
				t.Errorf("shared = %d, want 4096", r.Kernels[0].SharedStaticBytes)
			}
		}},
		{"local memory is reported", cudaLocal, func(t *testing.T, r *Result) {
			k := r.Kernels[0]
			if k.StackFrameBytes < 1024 || r.SASS.LocalLoads == 0 {
				t.Errorf("stack = %d LDL = %d, want a 1024-byte frame and local loads", k.StackFrameBytes, r.SASS.LocalLoads)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mustCompile(t, Request{Lang: LangCUDA, Source: tc.src, Arch: "sm_90"})
			if !r.OK || r.Status != StatusOK {
				t.Fatalf("compile failed: %+v\n%s", r.Diagnostics, r.Log)
			}
			if r.SASS == nil {
				t.Fatalf("no SASS summary (note %q)", r.Note)
			}
			if r.CompileSeconds <= 0 {
				t.Errorf("compile_seconds = %v", r.CompileSeconds)
			}
			tc.check(t, r)
			t.Logf("%s: %.3fs, kernels %+v", tc.name, r.CompileSeconds, r.Kernels[0].Name)
		})
	}
}

func TestCompileCUDAErrorAndCache(t *testing.T) {
	needTool(t, "nvcc", "cuobjdump")
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	r := mustCompile(t, Request{Lang: LangCUDA, Source: cudaSyntaxError, Arch: "sm_90"})
	if r.OK || r.Status != StatusCompileError {
		t.Fatalf("ok=%v status=%s, want a compile error", r.OK, r.Status)
	}
	if len(r.Diagnostics) == 0 {
		t.Fatalf("no diagnostics; log:\n%s", r.Log)
	}
	d := r.Diagnostics[0]
	if d.File != "kernel.cu" || d.Line != 3 || d.Severity != "error" || !strings.Contains(d.Message, "undefined_name") || d.Col != 23 {
		t.Errorf("diagnostic = %+v, want kernel.cu:3:23 error about undefined_name", d)
	}
	first := mustCompile(t, Request{Lang: LangCUDA, Source: cudaScale, Arch: "sm_90"})
	again := mustCompile(t, Request{Lang: LangCUDA, Source: cudaScale, Arch: "sm_90"})
	if first.Cached || !again.Cached {
		t.Errorf("cached first=%v again=%v, want false then true", first.Cached, again.Cached)
	}
	if again.Kernels[0].Registers != first.Kernels[0].Registers {
		t.Errorf("cached result differs: %d vs %d registers", again.Kernels[0].Registers, first.Kernels[0].Registers)
	}
	other := mustCompile(t, Request{Lang: LangCUDA, Source: cudaScale, Arch: "sm_80"})
	if other.Cached || other.Arch != "sm_80" {
		t.Errorf("another arch must be a separate compile: cached=%v arch=%s", other.Cached, other.Arch)
	}
}

func TestCompileTimeout(t *testing.T) {
	needTool(t, "nvcc", "cuobjdump")
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	start := time.Now()
	// nvcc needs a few hundred ms for any kernel: 30 ms must kill it.
	r := mustCompile(t, Request{Lang: LangCUDA, Source: cudaWMMA, Arch: "sm_90", Timeout: 30 * time.Millisecond})
	if r.OK || r.Status != StatusTimeout {
		t.Fatalf("status = %s ok=%v, want timeout", r.Status, r.OK)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("timeout took %s to come back", el)
	}
	// A timeout is not cached: with time enough the same source compiles.
	if r2 := mustCompile(t, Request{Lang: LangCUDA, Source: cudaWMMA, Arch: "sm_90"}); !r2.OK || r2.Cached {
		t.Errorf("after a timeout: ok=%v cached=%v, want a fresh successful compile", r2.OK, r2.Cached)
	}
}

const cVec = `#include <stdint.h>
void saxpy(const float* restrict x, float* restrict y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
`

const cBroken = `#include <stdint.h>
void saxpy(const float* x, float* y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i]
}
`

func TestCompileC(t *testing.T) {
	needTool(t, "gcc")
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	r := mustCompile(t, Request{Lang: LangC, Source: cVec})
	if !r.OK {
		t.Fatalf("gcc failed: %+v\n%s", r.Diagnostics, r.Log)
	}
	if len(r.Vectorized) == 0 || !strings.Contains(r.Vectorized[0], "line 3") {
		t.Errorf("vectorized = %v, want the loop on line 3", r.Vectorized)
	}
	r = mustCompile(t, Request{Lang: LangC, Source: cBroken})
	if r.OK || len(r.Diagnostics) == 0 {
		t.Fatalf("ok=%v diagnostics=%v, want an error", r.OK, r.Diagnostics)
	}
	d := r.Diagnostics[0]
	if d.File != "kernel.c" || d.Line != 3 || d.Col == 0 || d.Severity != "error" {
		t.Errorf("diagnostic = %+v, want kernel.c:3:N error", d)
	}
	r = mustCompile(t, Request{Lang: LangC, Source: "int f(void) { return X; }\n", Flags: []string{"-DX=3"}})
	if !r.OK {
		t.Errorf("flags were not passed: %+v", r.Diagnostics)
	}
}

const tritonAdd = `import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)
`

const tritonDot = `import triton
import triton.language as tl


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], c)
`

const tritonBroken = `import triton
import triton.language as tl


@triton.jit
def bad_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, no_such_name)
`

func TestCompileTriton(t *testing.T) {
	needPython(t)
	needTool(t, "cuobjdump")
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	r := mustCompile(t, Request{Lang: LangTriton, Source: tritonAdd, Arch: "sm_90", Constants: map[string]any{"BLOCK": 1024},
		Divisible16: []string{"n"}})
	if !r.OK {
		t.Fatalf("triton compile failed: status %s %+v\n%s", r.Status, r.Diagnostics, r.Log)
	}
	k := r.Kernels[0]
	if k.Name != "add_kernel" || k.Registers <= 0 || k.NumWarps != 4 {
		t.Errorf("kernel = %+v, want add_kernel with registers and 4 warps", k)
	}
	if r.SASS == nil || !r.SASS.Vector16Load {
		t.Errorf("SASS = %+v, want 16-byte loads for a 1024-wide fp32 block", r.SASS)
	}
	if !strings.Contains(r.Note, "x_ptr: *fp32") {
		t.Errorf("note = %q, want the guessed signature", r.Note)
	}
	r = mustCompile(t, Request{Lang: LangTriton, Source: tritonDot, Arch: "sm_90",
		Signature: map[string]string{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}, Constants: map[string]any{"BLOCK": 64}})
	if !r.OK || !r.SASS.TensorCore {
		t.Errorf("tl.dot on fp16: ok=%v tensor_core=%v (%v)\n%s", r.OK, r.SASS != nil && r.SASS.TensorCore, r.Diagnostics, r.Log)
	}
	r = mustCompile(t, Request{Lang: LangTriton, Source: tritonBroken, Arch: "sm_90", Constants: map[string]any{"BLOCK": 128}})
	if r.OK || len(r.Diagnostics) == 0 {
		t.Fatalf("ok=%v diagnostics=%v, want an error", r.OK, r.Diagnostics)
	}
	if d := r.Diagnostics[0]; d.File != "kernel.py" || d.Line != 8 || !strings.Contains(d.Message, "no_such_name") {
		t.Errorf("diagnostic = %+v, want kernel.py:8 about no_such_name", d)
	}
	r = mustCompile(t, Request{Lang: LangTriton, Source: "def f(:\n", Arch: "sm_90"})
	if r.OK || len(r.Diagnostics) == 0 || r.Diagnostics[0].Line != 1 {
		t.Errorf("python syntax error: ok=%v diagnostics=%+v", r.OK, r.Diagnostics)
	}
}

func TestCompileBadRequests(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want string
	}{
		{"language", Request{Lang: "fortran", Source: "x"}, "unknown language"},
		{"empty", Request{Lang: LangC, Source: "  "}, "empty source"},
		{"arch", Request{Lang: LangCUDA, Source: cudaScale, Arch: "hopper"}, "arch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(context.Background(), tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	var missing *ToolMissingError
	_, err := FindTool("kevolve-no-such-tool")
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "kevolve-no-such-tool not found") {
		t.Errorf("FindTool of a missing tool: %v", err)
	}
	t.Setenv("PATH", "/nonexistent")
	t.Setenv("CC", "")
	if _, err := Compile(context.Background(), Request{Lang: LangC, Source: cVec}); !errors.As(err, &missing) || !strings.Contains(err.Error(), "apt-get install gcc") {
		t.Errorf("missing gcc: %v, want a ToolMissingError with a hint", err)
	}
}

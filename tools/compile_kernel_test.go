package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// TestCompileKernelOverMCP drives the real compilers through the tool: gcc
// always, nvcc when found (KEVOLVE_TEST_STRICT=1 requires it).
func TestCompileKernelOverMCP(t *testing.T) {
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	srv.AddTools(CompileKernel(nil, dir))
	c := toolstest.Connect(t, srv)

	cfile := filepath.Join(dir, "k.c")
	if err := os.WriteFile(cfile, []byte("void scale(float* restrict y, const float* restrict x, long n) {\n  for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i];\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("c from path", func(t *testing.T) {
		var r compile.Result
		toolstest.Decode(t, toolstest.Call(t, c, "compile_kernel", map[string]any{"path": cfile, "language": "c"}), &r)
		if !r.OK || len(r.Vectorized) == 0 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("compile error is a result, not a tool error", func(t *testing.T) {
		res := toolstest.Call(t, c, "compile_kernel", map[string]any{"source": "int f(void) { return 1 }\n", "language": "c"})
		var r compile.Result
		toolstest.Decode(t, res, &r)
		if r.OK || r.Status != compile.StatusCompileError || len(r.Diagnostics) == 0 || r.Diagnostics[0].Line != 1 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("cuda", func(t *testing.T) {
		_, err := compile.FindTool("nvcc")
		toolchaintest.Require(t, err)
		var r compile.Result
		toolstest.Decode(t, toolstest.Call(t, c, "compile_kernel", map[string]any{
			"language": "cuda", "arch": "sm_90", "flags": []any{"-DSCALE=3.0f"}, "timeout_s": 60,
			"source": "extern \"C\" __global__ void k(const float4* x, float4* y) { float4 v = x[threadIdx.x]; v.x *= SCALE; y[threadIdx.x] = v; }\n",
		}), &r)
		if !r.OK || r.SASS == nil || !r.SASS.Vector16Load || r.Kernels[0].Registers == 0 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("triton for gfx942", func(t *testing.T) {
		_, err := compile.FindPython()
		toolchaintest.Require(t, err)
		for _, tc := range []struct {
			name, src string
			args      map[string]any
			mfma      bool
		}{
			{"tl.dot emits MFMA", tritonDotSrc, map[string]any{"signature": map[string]any{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}, "constants": map[string]any{"BLOCK": 64}}, true},
			{"elementwise has none", tritonAddSrc, map[string]any{"constants": map[string]any{"BLOCK": 1024}}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				args := map[string]any{"language": "triton", "arch": "gfx942", "source": tc.src}
				for k, v := range tc.args {
					args[k] = v
				}
				var r compile.Result
				toolstest.Decode(t, toolstest.Call(t, c, "compile_kernel", args), &r)
				if !r.OK || r.Arch != "gfx942" || r.AMDGCN == nil || len(r.Kernels) != 1 || r.Kernels[0].AMD == nil {
					t.Fatalf("result %+v", r)
				}
				if r.AMDGCN.MFMA != tc.mfma || (r.AMDGCN.MFMACount > 0) != tc.mfma {
					t.Errorf("mfma = %v (%d, %v), want %v", r.AMDGCN.MFMA, r.AMDGCN.MFMACount, r.AMDGCN.MFMAOps, tc.mfma)
				}
				if a := r.Kernels[0].AMD; a.VGPRs == 0 || a.WavesPerSIMD == 0 || a.WavefrontSize != 64 {
					t.Errorf("amd resources %+v", a)
				}
				if len(r.See) == 0 || !strings.HasPrefix(r.See[0], "kb://hardware/amd/") {
					t.Errorf("see = %v", r.See)
				}
			})
		}
	})
	t.Run("cuda for gfx942 is hipified and linted", func(t *testing.T) {
		toolchaintest.Python(t)
		if tc := toolchain.Find(context.Background(), "clang-19"); !tc.Found {
			toolchaintest.Require(t, errors.New("clang-19 missing: "+tc.Missing))
		}
		var r compile.Result
		toolstest.Decode(t, toolstest.Call(t, c, "compile_kernel", map[string]any{"language": "cuda", "arch": "gfx942", "source": cudaShuffle32}), &r)
		if r.OK || len(r.Lint) == 0 || r.Lint[0].Line != 2 || r.Lint[0].Fix == "" || !strings.Contains(r.Ported, "__shfl_down_sync") {
			t.Fatalf("result ok=%v lint %+v diagnostics %+v", r.OK, r.Lint, r.Diagnostics)
		}
	})

	bad := []struct {
		name string
		args map[string]any
		want string
	}{
		{"no source", map[string]any{"language": "c"}, "source"},
		{"both", map[string]any{"language": "c", "source": "x", "path": cfile}, "not both"},
		{"missing file", map[string]any{"language": "c", "path": filepath.Join(dir, "nope.c")}, "cannot read path"},
		{"bad language", map[string]any{"language": "fortran", "source": "x"}, ""},
		{"timeout too long", map[string]any{"language": "c", "source": "int x;", "timeout_s": 9999}, "timeout_s"},
		{"bad arch", map[string]any{"language": "cuda", "source": "int x;", "arch": "hopper"}, "arch"},
		{"hip for an NVIDIA arch", map[string]any{"language": "hip", "source": "int x;", "arch": "sm_90"}, "AMD"},
	}
	for _, tc := range bad {
		t.Run("tool error: "+tc.name, func(t *testing.T) {
			res := toolstest.Call(t, c, "compile_kernel", tc.args)
			if !res.IsError || !strings.Contains(toolstest.Text(res), tc.want) {
				t.Fatalf("want a tool error mentioning %q, got error=%v %s", tc.want, res.IsError, toolstest.Text(res))
			}
		})
	}
}

const tritonDotSrc = `import triton
import triton.language as tl


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
`

const tritonAddSrc = `import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
`

// A 32-lane warp reduction: the 0xffffffff mask on line 2 is the first finding.
const cudaShuffle32 = `__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
extern "C" __global__ void k(const float* x, float* y) { y[blockIdx.x] = warp_sum(x[threadIdx.x]); }
`

package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// TestCompileKernelOverMCP drives the real compilers through the tool: gcc
// always, nvcc when found (KEVOLVE_TEST_STRICT=1 requires it).
func TestCompileKernelOverMCP(t *testing.T) {
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	srv.AddTools(CompileKernel(nil))
	c := toolstest.Connect(t, srv)

	dir := t.TempDir()
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

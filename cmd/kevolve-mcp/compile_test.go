package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

const (
	cKernel   = "#include <stddef.h>\nvoid add(float *restrict a, const float *restrict b, size_t n) {\n  for (size_t i = 0; i < n; i++) a[i] += b[i];\n}\n"
	cBroken   = "void f( {\n}\n"
	tritonAdd = `import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
`
)

func writeSource(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// compileBinary runs the real binary's compile command with its own cache.
func compileBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"compile"}, args...)...)
	cmd.Env = append(os.Environ(), "KEVOLVE_CACHE_DIR="+t.TempDir())
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestCompileCommand(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		toolchaintest.Require(t, err)
	}
	good := writeSource(t, "add.c", cKernel)
	bad := writeSource(t, "bad.c", cBroken)

	t.Run("c table", func(t *testing.T) {
		out, errs, code := compileBinary(t, "--lang", "c", good)
		if code != 0 || !strings.Contains(out, "status") || !strings.Contains(out, "OK") || !strings.Contains(out, "vectorized loops:") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
	})
	t.Run("c json is the tool's result", func(t *testing.T) {
		out, errs, code := compileBinary(t, good, "--json", "--lang=c")
		var r compile.Result
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.OK || r.Status != compile.StatusOK || r.Language != "c" || len(r.Vectorized) == 0 {
			t.Fatalf("exit %d %+v\n%s\n%s", code, r, out, errs)
		}
	})
	t.Run("compile error exits 1 with located diagnostics", func(t *testing.T) {
		out, errs, code := compileBinary(t, "--lang", "c", "--json", bad)
		var r compile.Result
		if code != 1 || json.Unmarshal([]byte(out), &r) != nil || r.OK || r.Status != compile.StatusCompileError {
			t.Fatalf("exit %d %+v\n%s", code, r, errs)
		}
		if len(r.Diagnostics) == 0 || r.Diagnostics[0].Line != 1 || r.Diagnostics[0].Severity != "error" {
			t.Fatalf("diagnostics %+v", r.Diagnostics)
		}
		if !strings.Contains(errs, "compile: compile_error") {
			t.Errorf("stderr %q", errs)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no lang", []string{good}, "--lang is required"},
		{"no file", []string{"--lang", "c"}, "want one source FILE"},
		{"two files", []string{"--lang", "c", good, bad}, "want one source FILE, got 2"},
		{"missing file", []string{"--lang", "c", "/nonexistent/k.c"}, "cannot read path"},
		{"unknown lang", []string{"--lang", "fortran", good}, `unknown language "fortran"`},
		{"bad timeout", []string{"--lang", "c", "--timeout", "9999", good}, "timeout_s must be between 0 and 600"},
		{"bad arch", []string{"--lang", "cuda", "--arch", "sm90", good}, `arch "sm90"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := compileBinary(t, tt.args...)
			if code != 1 || out != "" || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q, want %q", code, out, errs, tt.want)
			}
		})
	}
}

// Triton compiles for an NVIDIA arch on a machine without a GPU; --constant
// values reach the kernel as numbers.
func TestCompileCommandTriton(t *testing.T) {
	toolchaintest.Python(t)
	src := writeSource(t, "add.py", tritonAdd)
	out, errs, code := compileBinary(t, "--lang", "triton", "--arch", "sm_90", "--constant", "BLOCK=1024",
		"--signature", "x_ptr=*bf16,y_ptr=*bf16,out_ptr=*bf16", "--divisible16", "n", "--json", src)
	var r compile.Result
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.OK || r.Arch != "sm_90" {
		t.Fatalf("exit %d %+v\n%s\n%s", code, r, out, errs)
	}
	if len(r.Kernels) != 1 || r.Kernels[0].Name != "add_kernel" || r.SASS == nil || !r.SASS.Vector16Load {
		t.Fatalf("kernels %+v sass %+v: want add_kernel with 16-byte loads (bf16, BLOCK 1024, n %% 16 == 0)", r.Kernels, r.SASS)
	}
}

func TestConstantValue(t *testing.T) {
	for in, want := range map[string]any{"1024": int64(1024), "0.5": 0.5, "true": true, "fp32": "fp32", "1e3": 1000.0} {
		if got := constantValue(in); got != want {
			t.Errorf("constantValue(%q) = %#v, want %#v", in, got, want)
		}
	}
}

const tritonDot = `import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))
`

// Issue 10's acceptance: `kevolve-mcp compile --lang triton --arch gfx942
// FILE` works on a machine without a GPU and reports MFMA for a tl.dot
// kernel; HIP C++ compiles device-only for gfx942 with clang-19.
func TestCompileCommandAMD(t *testing.T) {
	toolchaintest.Python(t)
	src := writeSource(t, "dot.py", tritonDot)
	args := []string{"--lang", "triton", "--arch", "gfx942", "--signature", "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp32", "--constant", "BLOCK=64"}
	out, errs, code := compileBinary(t, append(args, "--json", src)...)
	var r compile.Result
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.OK || r.Arch != "gfx942" {
		t.Fatalf("exit %d %+v\n%s\n%s", code, r, out, errs)
	}
	if r.AMDGCN == nil || !r.AMDGCN.MFMA || len(r.Kernels) != 1 || r.Kernels[0].AMD == nil || r.Kernels[0].AMD.WavefrontSize != 64 {
		t.Fatalf("no MFMA or AMD resources reported:\n%s", out)
	}
	out, errs, code = compileBinary(t, append(args, src)...)
	for _, want := range []string{"gfx942", "AMDGCN, wave64", "MFMA yes (v_mfma_", "kb://hardware/amd/"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("table lacks %q (exit %d):\n%s\n%s", want, code, out, errs)
		}
	}

	if _, err := exec.LookPath("clang-19"); err != nil {
		toolchaintest.Require(t, err)
	}
	hip := writeSource(t, "add.hip", "extern \"C\" __global__ void add(float* a, const float* b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n")
	out, errs, code = compileBinary(t, "--lang", "hip", "--arch", "gfx942", "--json", hip)
	r = compile.Result{}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.OK || len(r.Kernels) != 1 || r.Kernels[0].AMD == nil || r.AMDGCN == nil || r.AMDGCN.MFMA {
		t.Fatalf("hip gfx942: exit %d\n%s\n%s", code, out, errs)
	}
}

package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A C source the candidates below build themselves: rownorm and relu
// (the work), a no-op, and a function that uses libc's memcpy (so the library's
// handle can find memcpy in a dependency).
const nativeSrc = `
#include <math.h>
#include <stdint.h>
#include <string.h>
void rownorm(const float* x, float* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) s += (double)x[r * cols + c] * x[r * cols + c];
        float n = (float)sqrt(s);
        if (n < 1e-12f) n = 1e-12f;
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] / n;
    }
}
void relu(float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) if (y[i] < 0) y[i] = 0; }
void noop(void) {}
void copy(void* d, const void* s, size_t n) { memcpy(d, s, n); }
`

// nativeCandidate builds nativeSrc with gcc at import (setup) and runs
// body as its forward; lib is the ctypes handle.
func nativeCandidate(setup, body string) string {
	return `import ctypes, os, shutil, subprocess, tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F
SRC = r"""` + nativeSrc + `"""
d = tempfile.mkdtemp()
with open(os.path.join(d, "k.c"), "w") as f:
    f.write(SRC)
` + setup + `
V = ctypes.c_void_p

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
` + body + "\n"
}

const nativeGcc = `cc = os.environ.get("CC") or shutil.which("gcc") or "cc"
subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", os.path.join(d, "k.so"), os.path.join(d, "k.c"), "-lm"], check=True)
lib = ctypes.CDLL(os.path.join(d, "k.so"))`

const nativeRownorm = `        lib.rownorm.argtypes = [V, V, ctypes.c_int64, ctypes.c_int64]
        lib.rownorm(x.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1])
        return y`

// TestNativeOwnKernel: a ctypes call into a library the candidate built
// counts as its own kernel (no "no custom kernel" warning, library ops
// beside it allowed); a ctypes call into a system library, a copy of one,
// or a libc function found through the candidate's handle does not, so
// verdicts stay what they were (evaluate/guards/native.py has the rule).
func TestNativeOwnKernel(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU candidates")
	}
	ev := evaluator(t)
	libcCopy := `        libc = ctypes.CDLL("libc.so.6")
        libc.memcpy.argtypes = [V, V, ctypes.c_size_t]
        libc.memcpy(y.data_ptr(), x.data_ptr(), x.numel() * 4)
`
	matmul := "        z = torch.matmul(x, self.w.t()).contiguous()\n"
	cases := []struct {
		name, ref, cand, want string
		warned                bool   // the "no custom kernel" warning (a pass) or reference_ops' "no kernel of its own ran"
		detail                string // in the reference_ops check's detail
	}{
		{"own_build", refNormalize, nativeCandidate(nativeGcc, nativeRownorm), VerdictPass, false, ""},
		{"load_c_path", refNormalize, nativeCandidate("from kevolve import load_c\nlib = ctypes.CDLL(load_c(SRC).path)", nativeRownorm), VerdictPass, false, ""},
		{"own_relu_beside_matmul", refMatmulRelu, withLinear(nativeCandidate(nativeGcc, matmul+`        lib.relu.argtypes = [V, ctypes.c_int64]
        lib.relu(z.data_ptr(), z.numel())
        return z`)), VerdictPass, false, ""},
		{"libc_beside_torch", refNormalize, nativeCandidate("", libcCopy+normBody+"        return x / n"), VerdictPass, true, ""},
		{"libc_beside_matmul", refMatmulRelu, withLinear(nativeCandidate("", libcCopy+matmul+"        return z.clamp_min(0)")),
			VerdictIntegrityViolation, true, "no kernel of its own ran"},
		{"libc_memcpy_through_own_handle", refMatmulRelu, withLinear(nativeCandidate(nativeGcc, `        lib.memcpy.argtypes = [V, V, ctypes.c_size_t]
        lib.memcpy(y.data_ptr(), x.data_ptr(), x.numel() * 4)
`+matmul+"        return z.clamp_min(0)")), VerdictIntegrityViolation, true, "no kernel of its own ran"},
		{"copied_system_library", refMatmulRelu, withLinear(nativeCandidate(`import ctypes.util
name = ctypes.util.find_library("m")
for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
    if os.path.exists(os.path.join(folder, name)):
        shutil.copy(os.path.join(folder, name), os.path.join(d, "libmine.so"))
        break
lib = ctypes.CDLL(os.path.join(d, "libmine.so"))
lib.cos.restype = ctypes.c_double`, "        lib.cos(ctypes.c_double(0.5))\n"+matmul+"        return z.clamp_min(0)")),
			VerdictIntegrityViolation, true, "no kernel of its own ran"},
		// Its own no-op beside the reference's whole trace is the reference (the decoy rule).
		{"own_noop_beside_reference", refNormalize, nativeCandidate(nativeGcc, "        lib.noop()\n        return F.normalize(x, dim=1)"),
			VerdictIntegrityViolation, false, "the candidate is the reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref},
				Candidate: Source{Code: tc.cand}, Target: testTarget(), Timeout: 120 * time.Second, SkipTiming: true}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			t.Logf("verdict=%s warnings=%v notes=%v", res.Verdict, res.Warnings, res.Notes)
			if res.Verdict != tc.want {
				b, _ := json.MarshalIndent(res.Checks, "", "  ")
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, b)
			}
			detail, failed := failedCheck(res, "reference_ops")
			if tc.detail != "" && (!failed || !strings.Contains(detail, tc.detail)) {
				t.Errorf("reference_ops failed: %v (%s), want it failed with %q", failed, detail, tc.detail)
			}
			warned := strings.Contains(strings.Join(res.Warnings, "\n"), "no custom kernel")
			if tc.want == VerdictPass && warned != tc.warned {
				t.Errorf("\"no custom kernel\" warning: %v, want %v (%q)", warned, tc.warned, res.Warnings)
			}
		})
	}
}

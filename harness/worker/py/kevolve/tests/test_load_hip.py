"""load_hip and hipify. Here (no ROCm): hipify for real, the clear error on a
non-ROCm torch, and the argument handling load_hip shares with load_cuda.
On torch's ROCm build with an AMD GPU: compile, launch and compare with
torch (KEVOLVE_AMD_GPU=1 makes a missing AMD GPU a failure instead of a skip;
KEVOLVE_GPU=1 does not, as it is set on NVIDIA boxes too)."""

import os
import tempfile
import unittest

import torch

from kevolve import CompileError, hipify, load_hip
from kevolve._hip import HipModule, rocm_torch_error
from kevolve._sig import cuda_kernels

ROCM = bool(getattr(torch.version, "hip", None)) and torch.cuda.is_available()
STRICT_AMD = os.environ.get("KEVOLVE_AMD_GPU") == "1"

CUDA_REDUCE = r'''#include <cuda_runtime.h>
#include <cuda_fp16.h>
__inline__ __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
extern "C" __global__ void rowsum(const float* x, float* out, int n, cudaStream_t unused) {
    float s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[blockIdx.x * n + i];
    s = warp_sum(s);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
'''

HIP_SRC = r'''
#include <hip/hip_runtime.h>
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void wavesum(const float* x, float* out) {
    float v = x[blockIdx.x * warpSize + threadIdx.x];
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
'''


class Hipify(unittest.TestCase):
    def test_ports_the_api_and_keeps_lines(self):
        out = hipify(CUDA_REDUCE, keep_lines=True)
        self.assertIn("#include <hip/hip_runtime.h>", out)
        self.assertIn("hip/hip_fp16.h", out)
        self.assertIn("hipStream_t unused", out)
        self.assertNotIn("cuda", out.replace("hipify", ""))
        self.assertEqual(out.count("\n"), CUDA_REDUCE.count("\n"), "keep_lines must keep line numbers")
        # hipify leaves 32-lane warp code alone: that is the lint's job.
        self.assertIn("__shfl_xor_sync(0xffffffff", out)

    def test_adds_the_runtime_header_nvcc_implies(self):
        src = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n'
        self.assertTrue(hipify(src).startswith('#include "hip/hip_runtime.h"\n'))
        self.assertEqual(hipify(src, keep_lines=True), src)

    def test_repeated_calls_are_independent(self):
        a = hipify("cudaStream_t s;\n")
        b = hipify("cudaEvent_t e;\n")
        self.assertEqual((a, b), ("hipStream_t s;\n", "hipEvent_t e;\n"))

    def test_bad_input(self):
        with self.assertRaises(TypeError):
            hipify(b"bytes")


@unittest.skipIf(ROCM, "torch is a ROCm build here")
class NotRocm(unittest.TestCase):
    def test_clear_error(self):
        msg = rocm_torch_error()
        self.assertIsNotNone(msg)
        for want in ("ROCm", torch.__version__, "compile_kernel", "gfx942"):
            self.assertIn(want, msg)
        with self.assertRaises(RuntimeError) as cm:
            load_hip(HIP_SRC)
        self.assertEqual(str(cm.exception), msg)
        with self.assertRaises(RuntimeError) as cm:
            load_hip(CUDA_REDUCE, hipify=True)
        self.assertIn("ROCm build", str(cm.exception))

    def test_bad_arguments_come_first(self):
        with self.assertRaises(ValueError):
            load_hip(HIP_SRC, backend="nvrtc")
        with self.assertRaises(TypeError):
            load_hip(None)

    def test_launch_arguments_are_checked_as_load_cuda_checks_them(self):
        kernels, mangled = cuda_kernels(HIP_SRC)
        mod = HipModule(b"", kernels, mangled, backend="hiprtc", arch="gfx942", compile_seconds=0.0,
                        cached=False, path="", source=HIP_SRC)
        self.assertEqual(sorted(mod.kernels), ["scale", "wavesum"])
        x = torch.zeros(4)
        cases = [
            ((x, x, 1.0), "takes 4 arguments, got 3"),
            ((x, x, 1.0, 4), "is on cpu"),
        ]
        for args, want in cases:
            with self.subTest(want=want):
                with self.assertRaises(TypeError) as cm:
                    mod.scale(*args, grid=1, block=64)
                self.assertIn(want, str(cm.exception))
        with self.assertRaises(TypeError):
            mod.scale(None, None, 1.0, 4, grid=(0,), block=64)
        with self.assertRaises(RuntimeError) as cm:
            mod.scale(None, None, 1.0, 4, grid=1, block=64)
        self.assertIn("ROCm build", str(cm.exception))
        with self.assertRaises(AttributeError):
            mod.nope  # noqa: B018


@unittest.skipUnless(ROCM or STRICT_AMD, "no ROCm torch with an AMD GPU (set KEVOLVE_AMD_GPU=1 on an AMD box)")
class Launch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["KEVOLVE_CACHE_DIR"] = cls.tmp.name
        if rocm_torch_error():
            raise AssertionError(rocm_torch_error())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_scale_and_wavesum(self):
        try:
            m = load_hip(HIP_SRC)
        except CompileError as e:
            self.fail(f"compile: {e}")
        n = 10_000
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        m.scale(x, y, 3.0, n, grid=((n + 255) // 256,), block=(256,))
        torch.testing.assert_close(y, 3.0 * x)
        wave = 64
        x = torch.randn(8, wave, device="cuda")
        out = torch.empty(8, device="cuda")
        m.wavesum(x, out, grid=8, block=wave)
        torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-5)
        self.assertIs(load_hip(HIP_SRC), m)


if __name__ == "__main__":
    unittest.main()

"""load_cuda: compiles here with NVRTC and nvcc (no GPU needed); launches and
checks against torch where a GPU is present. KEVOLVE_GPU=1 makes a missing
GPU a failure instead of a skip."""

import os
import tempfile
import time
import unittest

import torch

from kevolve import CompileError, load_cuda
from kevolve._cuda import _load_nvrtc, find_nvcc

SRC = r'''
#include <cuda_fp16.h>
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void add4(const float4* __restrict__ a, const float4* __restrict__ b, float4* c, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) { float4 u = a[i], v = b[i]; c[i] = make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w); }
}
extern "C" __global__ void hscale(const __half* x, __half* y, __half a, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hmul(x[i], a);
}
extern "C" __global__ void rowsum(const double* x, double* out, int cols) {
    extern __shared__ double part[];
    double s = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[(long)blockIdx.x * cols + c];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
'''

GPU = torch.cuda.is_available()
STRICT_GPU = os.environ.get("KEVOLVE_GPU") == "1"


def backends():
    out = []
    if _load_nvrtc() is not None:
        out.append("nvrtc")
    if find_nvcc() is not None:
        out.append("nvcc")
    return out


class Compile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["KEVOLVE_CACHE_DIR"] = cls.tmp.name
        if not backends():
            raise unittest.SkipTest("no NVRTC and no nvcc here")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_compile_and_cache(self):
        for b in backends():
            with self.subTest(b):
                src = SRC + f"// {b} {time.time()}\n"
                t0 = time.perf_counter()
                m = load_cuda(src, backend=b, arch="sm_90")
                dt = time.perf_counter() - t0
                self.assertEqual(m.backend, b)
                self.assertEqual(sorted(m.kernels), ["add4", "hscale", "rowsum", "scale"])
                self.assertTrue(m.cubin.startswith(b"\x7fELF"), "a cubin is an ELF image")
                self.assertFalse(m.cached)
                print(f"\nload_cuda[{b}] compile {dt:.3f}s")
                self.assertLess(dt, 5.0)

    def test_compile_error(self):
        for b in backends():
            with self.subTest(b):
                with self.assertRaises(CompileError) as cm:
                    load_cuda('extern "C" __global__ void k(int n) { n +; }\n', backend=b, arch="sm_90")
                self.assertIn("kernel.cu(1)", cm.exception.log)

    def test_cpp_linkage_is_explained(self):
        m = load_cuda('__global__ void cpp(int n) {}\n', arch="sm_90")
        with self.assertRaisesRegex(AttributeError, 'extern "C"'):
            m.cpp


@unittest.skipUnless(GPU or STRICT_GPU, "no GPU (set KEVOLVE_GPU=1 on a GPU box)")
class Launch(unittest.TestCase):
    def test_against_torch(self):
        self.assertTrue(GPU, "KEVOLVE_GPU=1 but torch sees no GPU")
        for b in backends():
            with self.subTest(b):
                src = SRC + f"// launch {b} {time.time()}\n"
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                m = load_cuda(src, backend=b)
                t1 = time.perf_counter()
                n = 1_000_003
                x = torch.randn(n, device="cuda")
                y = torch.empty_like(x)
                m.scale(x, y, 3.0, n, grid=((n + 255) // 256,), block=(256,))
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                m.scale(x, y, 3.0, n, grid=((n + 255) // 256,), block=(256,))
                torch.cuda.synchronize()
                t3 = time.perf_counter()
                torch.testing.assert_close(y, 3.0 * x)
                print(f"\nload_cuda[{b}] compile {t1 - t0:.3f}s, first launch {1e3 * (t2 - t1):.2f}ms, "
                      f"next launch {1e3 * (t3 - t2):.3f}ms (arch {m.arch})")

                a, c = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
                out = torch.empty_like(a)
                m.add4(a, c, out, 1024, grid=4, block=256)
                torch.testing.assert_close(out, a + c)

                h = torch.randn(5000, device="cuda", dtype=torch.float16)
                ho = torch.empty_like(h)
                m.hscale(h, ho, 0.5, 5000, grid=20, block=256)
                torch.testing.assert_close(ho, h * 0.5)

                xd = torch.randn(64, 3000, device="cuda", dtype=torch.float64)
                od = torch.empty(64, device="cuda", dtype=torch.float64)
                # 8192 doubles = 64 KiB of dynamic shared memory: needs the opt-in.
                m.rowsum(xd, od, 3000, grid=64, block=8192 // 8, shared_mem=8192 * 8)
                torch.testing.assert_close(od, xd.sum(1))

                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    m.scale(x, y, -1.0, n, grid=((n + 255) // 256,), block=(256,))
                s.synchronize()
                torch.testing.assert_close(y, -x)

    def test_skip_launches(self):
        """The harness's warm-up: inside skip_launches a candidate's launch
        raises before running (its module compiled and loaded); a module
        that may not skip (the harness's own) and every launch outside run."""
        self.assertTrue(GPU, "KEVOLVE_GPU=1 but torch sees no GPU")
        from kevolve._loader import LaunchSkipped, skip_launches
        m = load_cuda(SRC + "// skip launches\n")
        n = 4096
        x = torch.randn(n, device="cuda")
        y = torch.zeros_like(x)
        with skip_launches():
            with self.assertRaises(LaunchSkipped):
                m.scale(x, y, 3.0, n, grid=16, block=256)
            torch.cuda.synchronize()
            self.assertEqual(int(y.count_nonzero()), 0)
            own = load_cuda(SRC + "// the harness's own\n")
            own.may_skip = False
            own.scale(x, y, 2.0, n, grid=16, block=256)
            torch.cuda.synchronize()
            torch.testing.assert_close(y, 2.0 * x)
        m.scale(x, y, 3.0, n, grid=16, block=256)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, 3.0 * x)

    def test_argument_errors(self):
        m = load_cuda(SRC)
        x = torch.randn(16, device="cuda")
        cases = [
            ("cpu tensor", (x.cpu(), x, 1.0, 16), "needs a CUDA tensor"),
            ("dtype", (x.double(), x, 1.0, 16), "dtype is torch.float64"),
            ("strided", (torch.randn(16, 2, device="cuda")[:, 1], x, 1.0, 16), "not contiguous"),
        ]
        for name, args, msg in cases:
            with self.subTest(name):
                with self.assertRaisesRegex(TypeError, msg):
                    m.scale(*args, grid=1, block=16)
        with self.assertRaisesRegex(TypeError, "aligned"):
            a = torch.randn(17, device="cuda")
            m.add4(a[1:], a[1:], a[1:], 4, grid=1, block=4)
        with self.assertRaisesRegex(RuntimeError, "launching scale"):
            m.scale(x, x, 1.0, 16, grid=1, block=4096)


if __name__ == "__main__":
    unittest.main()

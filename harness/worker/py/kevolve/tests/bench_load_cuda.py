"""Measure load_cuda on a GPU: compile (cold, disk-cached) and launch times per
backend, checked against torch on random inputs. Optional --inline: a
load_inline build through kevolve.patch_load_inline, cold then cached (run
twice in separate processes to see the cross-process cache).

    python -m kevolve.tests.bench_load_cuda [--inline]
"""

import json
import sys
import time
import uuid

t_import = time.perf_counter()
import torch  # noqa: E402

import kevolve  # noqa: E402
from kevolve import _cuda  # noqa: E402

t_import = time.perf_counter() - t_import

SRC = r'''
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
// One warp computes one 16x16 tile of C = A (row-major, MxK) * B (col-major, KxN).
extern "C" __global__ void wmma_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
    int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + (long)tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + (long)tn * 16 * K + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(C + (long)tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}
'''


def sync_time(f):
    torch.cuda.synchronize()
    t = time.perf_counter()
    f()
    torch.cuda.synchronize()
    return time.perf_counter() - t


def bench_backend(backend):
    out = {"backend": backend}
    src = SRC + f"// {uuid.uuid4()}\n"  # a cold compile every run
    t = time.perf_counter()
    m = kevolve.load_cuda(src, backend=backend)
    out["compile_cold_s"] = time.perf_counter() - t
    out["arch"] = m.arch
    _cuda._loaded.clear()  # next load reads the cubin from the disk cache
    t = time.perf_counter()
    m = kevolve.load_cuda(src, backend=backend)
    out["load_disk_cached_s"] = time.perf_counter() - t
    assert m.cached
    n = 10_000_019
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    ref = y + 0.75 * x
    out["first_launch_s"] = sync_time(lambda: m.axpy(x, y, 0.75, n, grid=((n + 255) // 256,), block=(256,)))
    torch.testing.assert_close(y, ref)
    ts = [sync_time(lambda: m.axpy(x, y, 0.0, n, grid=((n + 255) // 256,), block=(256,))) for _ in range(20)]
    out["launch_sync_median_us"] = sorted(ts)[10] * 1e6
    M, N, K = 256, 512, 1024
    A = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
    Bt = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=g)  # B col-major = B^T row-major
    C = torch.empty(M, N, device="cuda")
    m.wmma_gemm(A, Bt, C, M, N, K, grid=(N // 16, M // 16), block=32)
    torch.testing.assert_close(C, A.float() @ Bt.float().t(), rtol=1e-2, atol=1e-2)
    out["checks"] = "axpy and wmma_gemm match torch"
    return out


def bench_inline():
    import torch.utils.cpp_extension as ext
    kevolve.patch_load_inline()
    cuda_src = r'''
#include <torch/extension.h>
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }
torch::Tensor twice(torch::Tensor x) { auto y = torch::empty_like(x); int n = x.numel();
  k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n); return y; }
'''
    cpp_src = "torch::Tensor twice(torch::Tensor x);"
    t = time.perf_counter()
    mod = ext.load_inline("kv_bench_twice", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["twice"])
    dt = time.perf_counter() - t
    x = torch.randn(1000, device="cuda")
    torch.testing.assert_close(mod.twice(x), 2 * x)
    return {"load_inline_s": dt, "name": mod.__name__}


def main():
    torch.cuda.init()
    t = time.perf_counter()
    torch.zeros(1, device="cuda")
    res = {"import_s": t_import, "cuda_init_s": time.perf_counter() - t, "device": torch.cuda.get_device_name(),
           "nvrtc": bool(_cuda._load_nvrtc()), "nvcc": _cuda.find_nvcc(), "runs": []}
    for b in ("nvrtc", "nvcc"):
        res["runs"].append(bench_backend(b))
    if "--inline" in sys.argv:
        res["inline"] = bench_inline()
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

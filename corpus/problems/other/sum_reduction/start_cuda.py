"""Naive CUDA start for other/sum_reduction: one block per row, double per-thread partials, shared tree."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#include <cuda_bf16.h>
#ifndef VEC
#define VEC 1
#endif
// fp32 (small set) and bf16 (large set) share one template; math is fp32.
__device__ __forceinline__ float tof(float v) { return v; }
__device__ __forceinline__ float tof(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T fromf(float v);
template <> __device__ __forceinline__ float fromf<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
// VEC elements moved by one load or store (up to 16 bytes, or two for 8 fp32).
template <typename T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };
typedef unsigned long long uptr;
// A row takes the VEC-wide path only when every pointer it touches is
// VEC-aligned; the rest of the row (cols % VEC, or all of an unaligned row)
// goes scalar, so every VEC is correct for every shape.
template <typename T> __device__ __forceinline__ bool vec_ok(const T* p) { return (uptr)p % (sizeof(T) * VEC) == 0; }

extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    extern __shared__ double part[];     // blockDim.x doubles; blockDim.x is a power of two
    long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    typedef Pack<float, VEC> P;
    const long nv = (VEC > 1 && vec_ok(xr)) ? cols / VEC : 0;   // VEC-wide chunks
    double acc = 0.0;
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c];
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc += p.v[k];
    }
    for (long j = nv * VEC + threadIdx.x; j < cols; j += blockDim.x) acc += xr[j];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = (float)part[0];
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(f"#define VEC {VEC}\n" + SRC)
    return _K


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 256  # threads per block (a power of two: the reductions halve it)
VEC = 1  # floats per load (4 = 16 bytes); unaligned rows and tails go scalar
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 8, 4, 2], "THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        rows = x2.shape[0]
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        threads = THREADS
        if rows > 0:
            _kernels().row_sum(x2, y, rows, cols, grid=(rows,), block=(threads,), shared_mem=threads * 8)
        return y.view(x.shape[:-1])

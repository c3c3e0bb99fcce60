"""Naive CUDA start for other/relu: one element per thread, grid-stride loop."""
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

__device__ __forceinline__ float relu1(float v) { return v > 0.f ? v : (v != v ? v : 0.f); }   // NaN propagates, as in torch

extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long n) {
    const long first = blockIdx.x * (long)blockDim.x + threadIdx.x, stride = (long)gridDim.x * blockDim.x;
    typedef Pack<float, VEC> P;
    const long nv = (VEC > 1 && vec_ok(x) && vec_ok(y)) ? n / VEC : 0;   // VEC-wide chunks, then a scalar tail
    for (long c = first; c < nv; c += stride) {
        P p = reinterpret_cast<const P*>(x)[c], o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) o.v[k] = relu1(p.v[k]);
        reinterpret_cast<P*>(y)[c] = o;
    }
    for (long i = nv * VEC + first; i < n; i += stride) y[i] = relu1(x[i]);
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
THREADS = 256  # threads per block
ITEMS = 1  # elements per thread (the kernel is a grid-stride loop)
VEC = 1  # elements per load/store (8 bf16 or 4 fp32 = 16 bytes); scalar when unaligned
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 8, 4, 2], "THREADS": [64, 128, 256, 512, 1024], "ITEMS": [1, 2, 4, 8]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n > 0:
            _kernels().relu(x, y, n, grid=(min((n + THREADS * ITEMS * VEC - 1) // (THREADS * ITEMS * VEC), 65535 * 16),), block=(THREADS,))
        return y

"""Naive CUDA start for llm/swiglu: one thread per output element, grid-stride loop."""
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

template <typename T>
__device__ void swiglu_impl(const T* __restrict__ x, T* __restrict__ y, long tokens, long hidden) {
    const long n = tokens * hidden;
    const long first = blockIdx.x * (long)blockDim.x + threadIdx.x, stride = (long)gridDim.x * blockDim.x;
    if (VEC > 1 && hidden % VEC == 0 && vec_ok(x) && vec_ok(y)) {
        // VEC-wide chunks: hidden % VEC == 0 keeps every row's gate and up halves aligned.
        typedef Pack<T, VEC> P;
        const P* xp = reinterpret_cast<const P*>(x);
        P* yp = reinterpret_cast<P*>(y);
        const long hv = hidden / VEC, nv = tokens * hv;
        for (long i = first; i < nv; i += stride) {
            long t = i / hv, h = i % hv;
            P g = xp[t * 2 * hv + h], u = xp[t * 2 * hv + hv + h], o;
#pragma unroll
            for (int k = 0; k < VEC; ++k) { float gv = tof(g.v[k]); o.v[k] = fromf<T>(gv / (1.f + __expf(-gv)) * tof(u.v[k])); }
            yp[i] = o;
        }
        return;
    }
    for (long i = first; i < n; i += stride) {
        long t = i / hidden, h = i % hidden;
        float g = tof(x[t * 2 * hidden + h]);
        float u = tof(x[t * 2 * hidden + hidden + h]);
        y[i] = fromf<T>(g / (1.f + __expf(-g)) * u);
    }
}

extern "C" __global__ void swiglu_f32(const float* x, float* y, long tokens, long hidden) {
    swiglu_impl<float>(x, y, tokens, hidden);
}
extern "C" __global__ void swiglu_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, long tokens, long hidden) {
    swiglu_impl<__nv_bfloat16>(x, y, tokens, hidden);
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(f"#define VEC {VEC}\n" + SRC)
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


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
        H = x.shape[-1] // 2
        x2 = x.contiguous().view(-1, 2 * H)
        T = x2.shape[0]
        y = torch.empty(T, H, device=x.device, dtype=x.dtype)
        n = T * H
        if n > 0:
            blocks = min((n + THREADS * ITEMS * VEC - 1) // (THREADS * ITEMS * VEC), 65535 * 16)
            getattr(_kernels(), "swiglu_" + _SUFFIX[x.dtype])(x2, y, T, H, grid=(blocks,), block=(THREADS,))
        return y.view(*x.shape[:-1], H)

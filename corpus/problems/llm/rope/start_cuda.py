"""Naive CUDA start for llm/rope: one thread per rotated pair (x1[i], x2[i])."""
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
__device__ void rope_impl(const T* __restrict__ x, const float* __restrict__ cs, const float* __restrict__ sn,
                          T* __restrict__ y, long rows, long seq, long heads, long half) {
    // rows = B*S*NH vectors of length 2*half; pair (row, i) rotates elements i and i + half.
    const long first = blockIdx.x * (long)blockDim.x + threadIdx.x, stride = (long)gridDim.x * blockDim.x;
    if (VEC > 1 && half % VEC == 0 && vec_ok(x) && vec_ok(y) && vec_ok(cs) && vec_ok(sn)) {
        // VEC consecutive pairs per step; half % VEC == 0 keeps every chunk aligned.
        typedef Pack<T, VEC> P;
        typedef Pack<float, VEC> F;
        const long hv = half / VEC, nv = rows * hv;
        for (long p = first; p < nv; p += stride) {
            long row = p / hv, i = (p % hv) * VEC;
            long s = (row / heads) % seq;
            F c = *reinterpret_cast<const F*>(cs + s * half + i), sv = *reinterpret_cast<const F*>(sn + s * half + i);
            long base = row * 2 * half;
            P a = *reinterpret_cast<const P*>(x + base + i), b = *reinterpret_cast<const P*>(x + base + half + i), oa, ob;
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                float av = tof(a.v[k]), bv = tof(b.v[k]);
                oa.v[k] = fromf<T>(av * c.v[k] - bv * sv.v[k]);
                ob.v[k] = fromf<T>(bv * c.v[k] + av * sv.v[k]);
            }
            *reinterpret_cast<P*>(y + base + i) = oa;
            *reinterpret_cast<P*>(y + base + half + i) = ob;
        }
        return;
    }
    const long n = rows * half;
    for (long p = first; p < n; p += stride) {
        long row = p / half, i = p % half;
        long s = (row / heads) % seq;
        float c = cs[s * half + i], sv = sn[s * half + i];
        long base = row * 2 * half;
        float a = tof(x[base + i]), b = tof(x[base + half + i]);
        y[base + i] = fromf<T>(a * c - b * sv);
        y[base + half + i] = fromf<T>(b * c + a * sv);
    }
}

extern "C" __global__ void rope_f32(const float* x, const float* cs, const float* sn, float* y,
                                    long rows, long seq, long heads, long half) {
    rope_impl<float>(x, cs, sn, y, rows, seq, heads, half);
}
extern "C" __global__ void rope_bf16(const __nv_bfloat16* x, const float* cs, const float* sn, __nv_bfloat16* y,
                                     long rows, long seq, long heads, long half) {
    rope_impl<__nv_bfloat16>(x, cs, sn, y, rows, seq, heads, half);
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

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, S, NH, Dh = x.shape
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, half = B * S * NH, Dh // 2
        n = rows * half
        if n > 0:
            blocks = min((n + THREADS * ITEMS * VEC - 1) // (THREADS * ITEMS * VEC), 65535 * 16)
            getattr(_kernels(), "rope_" + _SUFFIX[x.dtype])(x, cos.float().contiguous(), sin.float().contiguous(), y,
                                                            rows, S, NH, half, grid=(blocks,), block=(THREADS,))
        return y

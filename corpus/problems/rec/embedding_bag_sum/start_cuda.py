"""Naive CUDA start for rec/embedding_bag_sum: one block per bag, threads across the embedding dim."""
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

extern "C" __global__ void embedding_bag(const float* __restrict__ table, const long* __restrict__ idx,
                                         const long* __restrict__ offs, float* __restrict__ out,
                                         long nbags, long nidx, long dim) {
    long b = blockIdx.x;
    if (b >= nbags) return;
    long start = offs[b];
    long end = (b + 1 < nbags) ? offs[b + 1] : nidx;
    if (VEC > 1 && dim % VEC == 0 && vec_ok(table) && vec_ok(out)) {
        // VEC floats of a row per load; dim % VEC == 0 keeps every row aligned.
        // Each element still sums the bag's rows in order, as the scalar path does.
        typedef Pack<float, VEC> P;
        const long dv = dim / VEC;
        for (long d = threadIdx.x; d < dv; d += blockDim.x) {
            P acc;
#pragma unroll
            for (int k = 0; k < VEC; ++k) acc.v[k] = 0.f;
            for (long i = start; i < end; ++i) {
                P r = reinterpret_cast<const P*>(table + idx[i] * dim)[d];
#pragma unroll
                for (int k = 0; k < VEC; ++k) acc.v[k] += r.v[k];
            }
            reinterpret_cast<P*>(out + b * dim)[d] = acc;
        }
        return;
    }
    for (long d = threadIdx.x; d < dim; d += blockDim.x) {
        float acc = 0.f;
        for (long i = start; i < end; ++i) acc += table[idx[i] * dim + d];
        out[b * dim + d] = acc;
    }
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
THREADS = 256  # threads per bag, at most (each strides over the embedding dim)
VEC = 1  # floats per load (4 = 16 bytes) when dim % VEC == 0; otherwise scalar
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 4, 8, 2], "THREADS": [32, 64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = table.contiguous()
        nbags, dim = offsets.shape[0], table.shape[1]
        out = torch.empty(nbags, dim, device=table.device, dtype=table.dtype)
        if nbags > 0:
            threads = min(THREADS, max(32, -(-dim // VEC)))
            _kernels().embedding_bag(table, indices.contiguous(), offsets.contiguous(), out,
                                     nbags, indices.numel(), dim, grid=(nbags,), block=(threads,))
        return out

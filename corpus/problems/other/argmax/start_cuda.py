"""Naive CUDA start for other/argmax: one block per row, (value, index) pairs reduced in shared memory."""
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

extern "C" __global__ void row_argmax(const float* __restrict__ x, long* __restrict__ out, long rows, long cols) {
    extern __shared__ unsigned char smem[];
    float* sv = (float*)smem;                           // blockDim.x values
    long* si = (long*)(smem + blockDim.x * sizeof(float) + (8 - (blockDim.x * sizeof(float)) % 8) % 8);
    long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float best = -__int_as_float(0x7f800000);
    long bi = cols;                                    // "none yet": larger than any real index
    // Each thread sees its indices in increasing order (chunks, then the
    // scalar tail past them), so "strictly greater" keeps the first index.
    auto see = [&](float v, long j) {
        // NaN wins (as in torch); otherwise strictly greater, so the first index is kept.
        if (v != v) { if (best == best) { best = v; bi = j; } }
        else if (best == best && (v > best || bi == cols)) { best = v; bi = j; }
    };
    typedef Pack<float, VEC> P;
    const long nv = (VEC > 1 && vec_ok(xr)) ? cols / VEC : 0;   // VEC-wide chunks
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c];
#pragma unroll
        for (int k = 0; k < VEC; ++k) see(p.v[k], c * VEC + k);
    }
    for (long j = nv * VEC + threadIdx.x; j < cols; j += blockDim.x) see(xr[j], j);
    sv[threadIdx.x] = best;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {     // blockDim.x is a power of two
        if (threadIdx.x < s) {
            float a = sv[threadIdx.x], b = sv[threadIdx.x + s];
            long ia = si[threadIdx.x], ib = si[threadIdx.x + s];
            bool a_nan = a != a, b_nan = b != b;
            bool take_b;
            if (ib == cols) take_b = false;
            else if (ia == cols) take_b = true;
            else if (a_nan || b_nan) take_b = b_nan && (!a_nan || ib < ia);
            else take_b = b > a || (b == a && ib < ia);
            if (take_b) { sv[threadIdx.x] = b; si[threadIdx.x] = ib; }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = si[0] == cols ? 0 : si[0];
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
        out = torch.empty(rows, device=x.device, dtype=torch.int64)
        threads = THREADS
        if rows > 0:
            _kernels().row_argmax(x2, out, rows, cols, grid=(rows,), block=(threads,), shared_mem=threads * 12 + 8)
        return out.view(x.shape[:-1])

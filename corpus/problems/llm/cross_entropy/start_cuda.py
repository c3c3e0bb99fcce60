"""Naive CUDA start for llm/cross_entropy: one block per row, max then sum-of-exp reductions."""
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
#ifndef ONLINE
#define ONLINE 0
#endif
#define NEG_INF (-__int_as_float(0x7f800000))
// f(v) for every element of the row that this thread owns: VEC-wide loads for
// the first nv chunks, scalar for the rest.
template <typename T, typename F>
__device__ __forceinline__ void visit(const T* __restrict__ xr, long nv, long cols, F f) {
    typedef Pack<T, VEC> P;
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c];
#pragma unroll
        for (int k = 0; k < VEC; ++k) f(tof(p.v[k]));
    }
    for (long j = nv * VEC + threadIdx.x; j < cols; j += blockDim.x) f(tof(xr[j]));
}

// The row's max m and sum of exp(x - m), left in sh[0] and sh[blockDim.x]
// (sh holds 2 * blockDim.x floats; blockDim.x is a power of two).
// ONLINE=0 reads the row twice (max, then sum); ONLINE=1 once, rescaling the
// running sum whenever the running max grows.
template <typename T>
__device__ void row_max_sumexp(const T* __restrict__ xr, long nv, long cols, float* sh, float& m_out, float& s_out) {
    float* sm = sh;
    float* ss = sh + blockDim.x;
    float m = NEG_INF, sum = 0.f;
    if (ONLINE) {
        visit(xr, nv, cols, [&](float v) {
            if (v > m) { sum = sum * __expf(m - v) + 1.f; m = v; }
            else if (v != NEG_INF) sum += __expf(v - m);   // NaN propagates into the sum, as in the two-pass form
        });
        sm[threadIdx.x] = m;
        ss[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) {
                float m1 = sm[threadIdx.x], m2 = sm[threadIdx.x + s];
                float M = fmaxf(m1, m2);
                ss[threadIdx.x] = M == NEG_INF ? 0.f : ss[threadIdx.x] * __expf(m1 - M) + ss[threadIdx.x + s] * __expf(m2 - M);
                sm[threadIdx.x] = M;
            }
            __syncthreads();
        }
    } else {
        visit(xr, nv, cols, [&](float v) { m = fmaxf(m, v); });
        sm[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) sm[threadIdx.x] = fmaxf(sm[threadIdx.x], sm[threadIdx.x + s]);
            __syncthreads();
        }
        m = sm[0];
        visit(xr, nv, cols, [&](float v) { sum += __expf(v - m); });
        ss[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) ss[threadIdx.x] += ss[threadIdx.x + s];
            __syncthreads();
        }
    }
    m_out = sm[0];
    s_out = ss[0];
}

template <typename T>
__device__ void xent_row(const T* __restrict__ logits, const long* __restrict__ targets, float* __restrict__ loss,
                         long rows, long vocab) {
    extern __shared__ float sh[];        // 2 * blockDim.x floats
    long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = logits + row * vocab;
    const long nv = (VEC > 1 && vec_ok(xr)) ? vocab / VEC : 0;   // VEC-wide chunks
    float m, sum;
    row_max_sumexp(xr, nv, vocab, sh, m, sum);
    if (threadIdx.x == 0) {
        long t = targets[row];
        float xt = (t >= 0 && t < vocab) ? tof(xr[t]) : __int_as_float(0x7fc00000);  // NaN if out of range
        loss[row] = logf(sum) + m - xt;
    }
}

extern "C" __global__ void xent_f32(const float* logits, const long* targets, float* loss, long rows, long vocab) {
    xent_row<float>(logits, targets, loss, rows, vocab);
}
extern "C" __global__ void xent_bf16(const __nv_bfloat16* logits, const long* targets, float* loss,
                                     long rows, long vocab) {
    xent_row<__nv_bfloat16>(logits, targets, loss, rows, vocab);
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(f"#define VEC {VEC}\n#define ONLINE {ONLINE}\n" + SRC)
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 512  # threads per block (a power of two: the reductions halve it)
VEC = 1  # elements per load (8 bf16 = 16 bytes); unaligned rows and tails go scalar
ONLINE = 0  # 1: one pass for max and sum (online rescaling), so the logits are read once, not twice
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 8, 4, 2], "ONLINE": [0, 1], "THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, V = logits.shape
        loss = torch.empty(B, device=logits.device, dtype=torch.float32)
        threads = THREADS
        if B > 0:
            getattr(_kernels(), "xent_" + _SUFFIX[logits.dtype])(logits.contiguous(), targets.contiguous(), loss, B, V,
                                                                 grid=(B,), block=(threads,), shared_mem=threads * 8)
        return loss

"""Naive CUDA start for llm/softmax: one block per row, three passes (max, sum, normalize)."""
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
__device__ void softmax_row(const T* __restrict__ x, T* __restrict__ y, long rows, long cols) {
    extern __shared__ float sh[];        // 2 * blockDim.x floats
    long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    typedef Pack<T, VEC> P;
    const long nv = (VEC > 1 && vec_ok(xr) && vec_ok(yr)) ? cols / VEC : 0;   // VEC-wide chunks
    float m, sum;
    row_max_sumexp(xr, nv, cols, sh, m, sum);
    const float inv = 1.f / sum;
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c], o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) o.v[k] = fromf<T>(__expf(tof(p.v[k]) - m) * inv);
        reinterpret_cast<P*>(yr)[c] = o;
    }
    for (long j = nv * VEC + threadIdx.x; j < cols; j += blockDim.x) yr[j] = fromf<T>(__expf(tof(xr[j]) - m) * inv);
}

extern "C" __global__ void softmax_f32(const float* x, float* y, long rows, long cols) {
    softmax_row<float>(x, y, rows, cols);
}
extern "C" __global__ void softmax_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, long rows, long cols) {
    softmax_row<__nv_bfloat16>(x, y, rows, cols);
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
VEC = 1  # elements per load/store (8 bf16 = 16 bytes); unaligned rows and tails go scalar
ONLINE = 0  # 1: one pass for max and sum (online rescaling), so the row is read twice, not three times
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 8, 4, 2], "ONLINE": [0, 1], "THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        rows = x2.shape[0]
        threads = THREADS
        if rows > 0:
            getattr(_kernels(), "softmax_" + _SUFFIX[x.dtype])(x2, y, rows, cols, grid=(rows,), block=(threads,),
                                                               shared_mem=threads * 8)
        return y.view(x.shape)

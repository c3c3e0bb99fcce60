"""Naive CUDA start for llm/layernorm: one block per row, two-pass (mean, then variance) reductions."""
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

// Block-wide sum of v; all threads get the result. sh holds blockDim.x floats; blockDim.x is a power of two.
__device__ float block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();                     // sh is reused by the next call
    return r;
}

template <typename T>
__device__ void layernorm_row(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                              T* __restrict__ y, long rows, long cols, float eps) {
    extern __shared__ float sh[];
    long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    typedef Pack<T, VEC> P;
    const long nv = (VEC > 1 && vec_ok(xr) && vec_ok(yr) && vec_ok(w) && vec_ok(b)) ? cols / VEC : 0;  // VEC-wide chunks
    const long tail = nv * VEC;
    float s = 0.f;
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c];
#pragma unroll
        for (int k = 0; k < VEC; ++k) s += tof(p.v[k]);
    }
    for (long j = tail + threadIdx.x; j < cols; j += blockDim.x) s += tof(xr[j]);
    const float mean = block_sum(s, sh) / (float)cols;
    float q = 0.f;
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c];
#pragma unroll
        for (int k = 0; k < VEC; ++k) { float d = tof(p.v[k]) - mean; q += d * d; }
    }
    for (long j = tail + threadIdx.x; j < cols; j += blockDim.x) { float d = tof(xr[j]) - mean; q += d * d; }
    const float rstd = rsqrtf(block_sum(q, sh) / (float)cols + eps);
    for (long c = threadIdx.x; c < nv; c += blockDim.x) {
        P p = reinterpret_cast<const P*>(xr)[c], pw = reinterpret_cast<const P*>(w)[c], pb = reinterpret_cast<const P*>(b)[c], o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) o.v[k] = fromf<T>((tof(p.v[k]) - mean) * rstd * tof(pw.v[k]) + tof(pb.v[k]));
        reinterpret_cast<P*>(yr)[c] = o;
    }
    for (long j = tail + threadIdx.x; j < cols; j += blockDim.x)
        yr[j] = fromf<T>((tof(xr[j]) - mean) * rstd * tof(w[j]) + tof(b[j]));
}

extern "C" __global__ void layernorm_f32(const float* x, const float* w, const float* b, float* y,
                                         long rows, long cols, float eps) {
    layernorm_row<float>(x, w, b, y, rows, cols, eps);
}
extern "C" __global__ void layernorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
                                          __nv_bfloat16* y, long rows, long cols, float eps) {
    layernorm_row<__nv_bfloat16>(x, w, b, y, rows, cols, eps);
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
THREADS = 256  # threads per block (a power of two: the reductions halve it)
VEC = 1  # elements per load/store (8 bf16 = 16 bytes); unaligned rows and tails go scalar
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"VEC": [1, 8, 4, 2], "THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        rows = x2.shape[0]
        threads = THREADS
        if rows > 0:
            kern = getattr(_kernels(), "layernorm_" + _SUFFIX[x.dtype])
            kern(x2, w.to(x.dtype).contiguous(), b.to(x.dtype).contiguous(), y, rows, cols, self.eps,
                 grid=(rows,), block=(threads,), shared_mem=threads * 4)
        return y.view(x.shape)

"""Naive CUDA start for llm/layernorm: one block per row, two-pass (mean, then variance) reductions."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#include <cuda_bf16.h>
// fp32 (small set) and bf16 (large set) share one template; math is fp32.
__device__ __forceinline__ float ld(const float* p, long i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long i, float v) { p[i] = __float2bfloat16(v); }

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
    const long base = row * cols;
    float s = 0.f;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) s += ld(x, base + j);
    const float mean = block_sum(s, sh) / (float)cols;
    float q = 0.f;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) { float d = ld(x, base + j) - mean; q += d * d; }
    const float rstd = rsqrtf(block_sum(q, sh) / (float)cols + eps);
    for (long j = threadIdx.x; j < cols; j += blockDim.x)
        st(y, base + j, (ld(x, base + j) - mean) * rstd * ld(w, j) + ld(b, j));
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
        _K = load_cuda(SRC)
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 256  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


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

"""Naive CUDA start for llm/rmsnorm: one block per row, shared-memory tree reduction, fp32 math.

Entry points exist for fp32 (the small set) and bf16 (the large set)."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#include <cuda_bf16.h>
__device__ __forceinline__ float ld(const float* p, long i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__device__ void rmsnorm_row(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                            long rows, long cols, float eps) {
    extern __shared__ float partial[];   // blockDim.x floats
    long row = blockIdx.x;
    if (row >= rows) return;             // the whole block leaves together
    const long base = row * cols;
    float acc = 0.f;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) { float v = ld(x, base + j); acc += v * v; }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {   // blockDim.x is a power of two
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    const float r = rsqrtf(partial[0] / (float)cols + eps);
    for (long j = threadIdx.x; j < cols; j += blockDim.x) st(y, base + j, ld(x, base + j) * r * ld(w, j));
}

extern "C" __global__ void rmsnorm_f32(const float* x, const float* w, float* y, long rows, long cols, float eps) {
    rmsnorm_row<float>(x, w, y, rows, cols, eps);
}
extern "C" __global__ void rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                                        long rows, long cols, float eps) {
    rmsnorm_row<__nv_bfloat16>(x, w, y, rows, cols, eps);
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
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        rows = x2.shape[0]
        threads = THREADS
        if rows > 0:
            kern = getattr(_kernels(), "rmsnorm_" + _SUFFIX[x.dtype])
            kern(x2, w.to(x.dtype).contiguous(), y, rows, cols, self.eps,
                 grid=(rows,), block=(threads,), shared_mem=threads * 4)
        return y.view(x.shape)

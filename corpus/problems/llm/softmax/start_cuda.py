"""Naive CUDA start for llm/softmax: one block per row, three passes (max, sum, normalize)."""
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

template <typename T>
__device__ void softmax_row(const T* __restrict__ x, T* __restrict__ y, long rows, long cols) {
    extern __shared__ float sh[];        // blockDim.x floats; blockDim.x is a power of two
    long row = blockIdx.x;
    if (row >= rows) return;
    const long base = row * cols;
    float m = -__int_as_float(0x7f800000);
    for (long j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, ld(x, base + j));
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    float sum = 0.f;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) sum += __expf(ld(x, base + j) - m);
    sh[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.f / sh[0];
    for (long j = threadIdx.x; j < cols; j += blockDim.x) st(y, base + j, __expf(ld(x, base + j) - m) * inv);
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
        _K = load_cuda(SRC)
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 512  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


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
                                                               shared_mem=threads * 4)
        return y.view(x.shape)

"""Naive CUDA start for llm/cross_entropy: one block per row, max then sum-of-exp reductions."""
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
__device__ void xent_row(const T* __restrict__ logits, const long* __restrict__ targets, float* __restrict__ loss,
                         long rows, long vocab) {
    extern __shared__ float sh[];        // blockDim.x floats; blockDim.x is a power of two
    long row = blockIdx.x;
    if (row >= rows) return;
    const long base = row * vocab;
    float m = -__int_as_float(0x7f800000);
    for (long j = threadIdx.x; j < vocab; j += blockDim.x) m = fmaxf(m, ld(logits, base + j));
    sh[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    m = sh[0];
    __syncthreads();
    float sum = 0.f;
    for (long j = threadIdx.x; j < vocab; j += blockDim.x) sum += __expf(ld(logits, base + j) - m);
    sh[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        long t = targets[row];
        float xt = (t >= 0 && t < vocab) ? ld(logits, base + t) : __int_as_float(0x7fc00000);  // NaN if out of range
        loss[row] = logf(sh[0]) + m - xt;
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

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, V = logits.shape
        loss = torch.empty(B, device=logits.device, dtype=torch.float32)
        threads = THREADS
        if B > 0:
            getattr(_kernels(), "xent_" + _SUFFIX[logits.dtype])(logits.contiguous(), targets.contiguous(), loss, B, V,
                                                                 grid=(B,), block=(threads,), shared_mem=threads * 4)
        return loss

"""Naive CUDA start for llm/gemm_bias_gelu: 16x16 shared-memory tiles, bias and GELU fused in the epilogue."""
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
#ifndef TILE
#define TILE 16
#endif

template <typename T>
__device__ void linear_gelu(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                            T* __restrict__ y, long M, long N, long K) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    long row = (long)blockIdx.y * TILE + threadIdx.y;
    long col = (long)blockIdx.x * TILE + threadIdx.x;
    long wrow = (long)blockIdx.x * TILE + threadIdx.x;   // the output feature this thread loads
    float acc = 0.f;
    for (long k0 = 0; k0 < K; k0 += TILE) {
        long kx = k0 + threadIdx.x, kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < M && kx < K) ? ld(x, row * K + kx) : 0.f;
        ws[threadIdx.y][threadIdx.x] = (wrow < N && kw < K) ? ld(w, wrow * K + kw) : 0.f;   // ws[k][n] = W[n][k]
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = acc + ld(bias, col);
        st(y, row * N + col, 0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
    }
}

extern "C" __global__ void linear_gelu_f32(const float* x, const float* w, const float* b, float* y,
                                           long M, long N, long K) {
    linear_gelu<float>(x, w, b, y, M, N, K);
}
extern "C" __global__ void linear_gelu_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
                                            __nv_bfloat16* y, long M, long N, long K) {
    linear_gelu<__nv_bfloat16>(x, w, b, y, M, N, K);
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC, flags=(f"-DTILE={TILE}",))
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
TILE = 16  # shared-memory tile edge; the block is TILE x TILE threads
TUNABLES = {"TILE": [8, 16, 32]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = weight.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        if (M + TILE - 1) // TILE > 65535:  # gridDim.y limit
            raise ValueError(f"M={M} is too large for this start's grid")
        if M * N > 0:
            getattr(_kernels(), "linear_gelu_" + _SUFFIX[x.dtype])(
                x.contiguous(), weight.to(x.dtype).contiguous(), bias.to(x.dtype).contiguous(), y, M, N, K,
                grid=((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), block=(TILE, TILE))
        return y

"""Naive CUDA start for llm/gemm_bf16: 16x16 shared-memory tiles, one output per thread, fp32 accumulate
(no tensor cores yet)."""
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
__device__ void gemm_tiled(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                           long M, long N, long K) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    long row = (long)blockIdx.y * TILE + threadIdx.y;
    long col = (long)blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (long k0 = 0; k0 < K; k0 += TILE) {
        long ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? ld(a, row * K + ka) : 0.f;
        bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? ld(b, kb * N + col) : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) st(c, row * N + col, acc);
}

extern "C" __global__ void gemm_f32(const float* a, const float* b, float* c, long M, long N, long K) {
    gemm_tiled<float>(a, b, c, M, N, K);
}
extern "C" __global__ void gemm_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c,
                                     long M, long N, long K) {
    gemm_tiled<__nv_bfloat16>(a, b, c, M, N, K);
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

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, device=a.device, dtype=a.dtype)
        if (M + TILE - 1) // TILE > 65535:  # gridDim.y limit
            raise ValueError(f"M={M} is too large for this start's grid")
        if M * N > 0:
            getattr(_kernels(), "gemm_" + _SUFFIX[a.dtype])(a.contiguous(), b.to(a.dtype).contiguous(), c, M, N, K,
                                                            grid=((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), block=(TILE, TILE))
        return c

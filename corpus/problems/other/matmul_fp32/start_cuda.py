"""Naive CUDA start for other/matmul_fp32: TILE x TILE shared-memory tiles, one output per
thread, fp32 throughout."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  long M, long N, long K) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    long row = (long)blockIdx.y * TILE + threadIdx.y;
    long col = (long)blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (long k0 = 0; k0 < K; k0 += TILE) {
        long ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? a[row * K + ka] : 0.f;
        bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? b[kb * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = acc;
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
TILE = 16  # shared-memory tile edge; the block is TILE x TILE threads
TUNABLES = {"TILE": [8, 16, 32]}

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC, flags=(f"-DTILE={TILE}",))
    return _K


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, device=a.device, dtype=torch.float32)
        if (M + TILE - 1) // TILE > 65535:  # gridDim.y limit
            raise ValueError(f"M={M} is too large for this start's grid")
        if M * N > 0:
            _kernels().matmul(a.float().contiguous(), b.float().contiguous(), c, M, N, K,
                              grid=((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), block=(TILE, TILE))
        return c.to(a.dtype)

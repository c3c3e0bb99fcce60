"""Naive CUDA start for rec/dcn_v2_cross: one thread per output element, a 16x16 shared-memory tiled
dot product, epilogue fused."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#ifndef TILE
#define TILE 16
#endif
extern "C" __global__ void cross_layer(const float* __restrict__ x0, const float* __restrict__ xl,
                                       const float* __restrict__ w, const float* __restrict__ bias,
                                       float* __restrict__ out, long batch, long dim) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    long row = (long)blockIdx.y * TILE + threadIdx.y;   // sample
    long col = (long)blockIdx.x * TILE + threadIdx.x;   // output feature
    float acc = 0.f;
    for (long k0 = 0; k0 < dim; k0 += TILE) {
        long kx = k0 + threadIdx.x, kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < batch && kx < dim) ? xl[row * dim + kx] : 0.f;
        // ws[k][n] = W[n][k]: W is (out, in) like nn.Linear.
        long wn = (long)blockIdx.x * TILE + threadIdx.x;
        ws[threadIdx.y][threadIdx.x] = (wn < dim && kw < dim) ? w[wn * dim + kw] : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < batch && col < dim) {
        long o = row * dim + col;
        out[o] = x0[o] * (acc + bias[col]) + xl[o];
    }
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC, flags=(f"-DTILE={TILE}",))
    return _K


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
TILE = 16  # shared-memory tile edge; the block is TILE x TILE threads
TUNABLES = {"TILE": [8, 16, 32]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x0, xl, weight, bias):
        B, D = xl.shape
        out = torch.empty(B, D, device=xl.device, dtype=xl.dtype)
        if B > 0 and D > 0:
            _kernels().cross_layer(x0.contiguous(), xl.contiguous(), weight.contiguous(), bias.contiguous(), out,
                                   B, D, grid=((D + TILE - 1) // TILE, (B + TILE - 1) // TILE), block=(TILE, TILE))
        return out

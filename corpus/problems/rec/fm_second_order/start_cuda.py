"""Naive CUDA start for rec/fm_second_order: one block per sample, a thread per embedding column,
shared-memory reduction over columns."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void fm_second_order(const float* __restrict__ emb, float* __restrict__ out,
                                           long batch, long nfield, long dim) {
    extern __shared__ float partial[];   // blockDim.x floats
    long b = blockIdx.x;
    if (b >= batch) return;
    const float* e = emb + b * nfield * dim;
    float acc = 0.f;
    for (long d = threadIdx.x; d < dim; d += blockDim.x) {
        float s = 0.f, sq = 0.f;
        for (long f = 0; f < nfield; ++f) { float v = e[f * dim + d]; s += v; sq += v * v; }
        acc += s * s - sq;
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {   // blockDim.x is a power of two
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[b] = 0.5f * partial[0];
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC)
    return _K


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 64  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        B, F, D = emb.shape
        out = torch.empty(B, 1, device=emb.device, dtype=emb.dtype)
        threads = THREADS
        if B > 0:
            _kernels().fm_second_order(emb.contiguous(), out, B, F, D, grid=(B,), block=(threads,),
                                       shared_mem=threads * 4)
        return out

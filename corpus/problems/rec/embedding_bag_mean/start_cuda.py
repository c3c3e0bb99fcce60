"""Naive CUDA start for rec/embedding_bag_mean: one block per bag, threads across the embedding dim."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void embedding_bag(const float* __restrict__ table, const long* __restrict__ idx,
                                         const long* __restrict__ offs, float* __restrict__ out,
                                         long nbags, long nidx, long dim) {
    long b = blockIdx.x;
    if (b >= nbags) return;
    long start = offs[b];
    long end = (b + 1 < nbags) ? offs[b + 1] : nidx;
    for (long d = threadIdx.x; d < dim; d += blockDim.x) {
        float acc = 0.f;
        for (long i = start; i < end; ++i) acc += table[idx[i] * dim + d];
        if (end > start) acc /= (float)(end - start);
        out[b * dim + d] = acc;
    }
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
THREADS = 256  # threads per bag, at most (each strides over the embedding dim)
TUNABLES = {"THREADS": [32, 64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = table.contiguous()
        nbags, dim = offsets.shape[0], table.shape[1]
        out = torch.empty(nbags, dim, device=table.device, dtype=table.dtype)
        if nbags > 0:
            threads = min(THREADS, max(32, dim))
            _kernels().embedding_bag(table, indices.contiguous(), offsets.contiguous(), out,
                                     nbags, indices.numel(), dim, grid=(nbags,), block=(threads,))
        return out

"""Naive CUDA start for rec/bucketize_hash: one thread per element, binary search in global memory."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void bucketize_hash(const float* __restrict__ x, const float* __restrict__ bounds,
                                          const long* __restrict__ ids, long* __restrict__ out,
                                          long n, long nb, long table_size) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    long lo = 0, hi = nb;                 // first boundary >= v (lower bound) = count of boundaries < v
    while (lo < hi) {
        long mid = (lo + hi) >> 1;
        if (bounds[mid] < v) lo = mid + 1; else hi = mid;
    }
    out[i] = (ids[i] * 1000003L + lo) % table_size;
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
THREADS = 256  # threads per block
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self, table_size: int):
        super().__init__()
        self.table_size = table_size

    def forward(self, x: torch.Tensor, boundaries: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        out = torch.empty(x.shape, device=x.device, dtype=torch.int64)
        if n > 0:
            _kernels().bucketize_hash(x.contiguous(), boundaries.contiguous(), ids.contiguous(), out, n,
                                      boundaries.numel(), self.table_size, grid=((n + THREADS - 1) // THREADS,), block=(THREADS,))
        return out

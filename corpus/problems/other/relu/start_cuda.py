"""Naive CUDA start for other/relu: one element per thread, grid-stride loop."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v > 0.f ? v : (v != v ? v : 0.f);   // NaN propagates, as in torch
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
THREADS = 256  # threads per block
ITEMS = 1  # elements per thread (the kernel is a grid-stride loop)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024], "ITEMS": [1, 2, 4, 8]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n > 0:
            _kernels().relu(x, y, n, grid=(min((n + THREADS * ITEMS - 1) // (THREADS * ITEMS), 65535 * 16),), block=(THREADS,))
        return y

"""Naive CUDA start for other/sum_reduction: one block per row, double per-thread partials, shared tree."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void row_sum(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    extern __shared__ double part[];     // blockDim.x doubles; blockDim.x is a power of two
    long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    double acc = 0.0;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) acc += xr[j];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = (float)part[0];
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
THREADS = 256  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        rows = x2.shape[0]
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        threads = THREADS
        if rows > 0:
            _kernels().row_sum(x2, y, rows, cols, grid=(rows,), block=(threads,), shared_mem=threads * 8)
        return y.view(x.shape[:-1])

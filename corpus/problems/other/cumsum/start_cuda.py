"""Naive CUDA start for other/cumsum: one block per row; the row is scanned in chunks of blockDim.x with a
Hillis-Steele scan in shared memory and a running carry (fp32 values, double carry)."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
extern "C" __global__ void row_cumsum(const float* __restrict__ x, float* __restrict__ y, long rows, long cols) {
    extern __shared__ double buf[];      // blockDim.x doubles
    long row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    double carry = 0.0;
    for (long c0 = 0; c0 < cols; c0 += blockDim.x) {
        long j = c0 + threadIdx.x;
        buf[threadIdx.x] = j < cols ? (double)xr[j] : 0.0;
        __syncthreads();
        for (int off = 1; off < blockDim.x; off <<= 1) {
            double add = threadIdx.x >= off ? buf[threadIdx.x - off] : 0.0;
            __syncthreads();
            buf[threadIdx.x] += add;
            __syncthreads();
        }
        if (j < cols) yr[j] = (float)(carry + buf[threadIdx.x]);
        carry += buf[blockDim.x - 1];
        __syncthreads();                 // buf is overwritten by the next chunk
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
THREADS = 256  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        rows = x2.shape[0]
        threads = THREADS
        if rows > 0 and cols > 0:
            _kernels().row_cumsum(x2, y, rows, cols, grid=(rows,), block=(threads,), shared_mem=threads * 8)
        return y.view(x.shape)

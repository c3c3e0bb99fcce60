# A coalesced copy: consecutive threads touch consecutive floats.
import cupy as cp
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void copy_coalesced(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) y[i] = x[i];
}
"""
_kernel = cp.RawKernel(_SRC, "copy_coalesced")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _kernel((132 * 16,), (256,), (cp.asarray(x), cp.asarray(y), cp.int64(n)))
        return y

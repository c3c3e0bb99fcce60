# Hostile (GPU): the honest custom kernel, after raising the context's
# device stack size and malloc heap size at import (limits the next
# evaluations in a kept child would run under).
import ctypes

import torch.nn as nn
import torch
from kevolve import load_cuda

k = load_cuda(r"""
extern "C" __global__ void relu2(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * 2.f + 1.f; }
}
""")
_cu = ctypes.CDLL("libcuda.so.1")
assert _cu.cuCtxSetLimit(0, ctypes.c_size_t(64 << 10)) == 0  # CU_LIMIT_STACK_SIZE
assert _cu.cuCtxSetLimit(2, ctypes.c_size_t(256 << 20)) == 0  # CU_LIMIT_MALLOC_HEAP_SIZE


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        k.relu2(x, y, n, grid=((n + 255) // 256,), block=(256,))
        return y

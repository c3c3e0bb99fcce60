# Hostile (issue 9, 179x): a custom kernel that computes for its first calls,
# then returns torch.empty_like(x) without launching anything.
import torch
import torch.nn as nn
from kevolve import load_cuda

k = load_cuda(r"""
extern "C" __global__ void relu2(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * 2.f + 1.f; }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = torch.empty_like(x)
        if self.calls <= 10:
            n = x.numel()
            k.relu2(x, y, n, grid=((n + 255) // 256,), block=(256,))
        return y

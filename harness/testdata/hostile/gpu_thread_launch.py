# Hostile (issue 9, 184x): returns at once; a Python thread launches the
# kernel on another stream.
import threading

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
        self.s = None

    def forward(self, x):
        if self.s is None:
            self.s = torch.cuda.Stream()
        y = torch.empty_like(x)
        n = x.numel()

        def launch():
            with torch.cuda.stream(self.s):
                k.relu2(x, y, n, grid=((n + 255) // 256,), block=(256,), stream=self.s)
        threading.Thread(target=launch, daemon=True).start()
        return y

import torch
import torch.nn as nn
from kevolve import load_c

k = load_c(r"""
void scale(const float* x, float* y, float a, long n) {
    for (long i = 0; i < n; i++) y[i] = a * x[i];
}""")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        k.scale(x, y, 2.0, x.numel())
        return y

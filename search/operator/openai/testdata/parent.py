import torch
import torch.nn as nn
from kevolve import load_c

SRC = r'''
void scale(const float* x, float* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] * 2.0f;
}
'''
THREADS = 1


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        load_c(SRC).scale(x, y, x.numel())
        return y

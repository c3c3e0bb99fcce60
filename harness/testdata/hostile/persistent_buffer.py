# Honest: rewrites one persistent output buffer on every call.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = None

    def forward(self, x):
        if self.buf is None or self.buf.shape != x.shape:
            self.buf = torch.empty_like(x)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        torch.div(x, n, out=self.buf)
        return self.buf

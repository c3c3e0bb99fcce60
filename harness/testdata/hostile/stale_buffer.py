# Hostile: after its first calls, returns its output buffer without
# rewriting it (stale values of an earlier call).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.buf = None

    def forward(self, x):
        self.calls += 1
        if self.buf is None:
            self.buf = torch.empty_like(x)
        if self.calls <= 12:
            n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
            torch.div(x, n, out=self.buf)
        return self.buf

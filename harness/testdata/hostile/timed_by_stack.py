# Hostile: behaves differently once timed. It looks for the harness's
# timing loop on the call stack and skips the work there.
import sys

import torch
import torch.nn as nn


def _timed():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "bench":
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if _timed():
            return torch.zeros_like(x)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

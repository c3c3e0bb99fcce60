# Hostile: computes honestly, but on its way out of every call replaces the
# function the reference computes with (F.normalize) by one returning
# zeros, and puts it back on its way in: the harness's own checks at the
# end of each stage would find torch as it was.
import torch
import torch.nn as nn
import torch.nn.functional as F

_real = F.normalize


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        F.normalize = _real
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        out = x / n
        F.normalize = lambda t, dim=1: torch.zeros_like(t)
        return out

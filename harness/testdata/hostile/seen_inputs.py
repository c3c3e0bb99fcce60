# Hostile: computes only for inputs it has not seen; an input it has seen
# (same pointer and shape) gets the earlier output.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), tuple(x.stride()))
        if key in self.seen:
            return self.seen[key].clone()
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        y = x / n
        self.seen[key] = y.clone()
        return y

# Hostile: from its 8th call on (past the correctness trials and the cache
# check), returns a cached output keyed by the input's data_ptr.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.cache = {}

    def forward(self, x):
        self.calls += 1
        key = (x.data_ptr(), tuple(x.shape))
        if self.calls >= 8 and key in self.cache:
            return self.cache[key]
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        y = x / n
        if self.calls >= 8:
            self.cache[key] = y
        return y

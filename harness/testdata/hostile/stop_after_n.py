# Hostile: correct for its first calls (the correctness trials and the cache
# check), then returns torch.empty_like(x) without computing anything.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 12:
            return torch.empty_like(x)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

# Honest: each bag's rows summed by a slice.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values, offsets):
        o = offsets.tolist()
        return torch.stack([values[o[b]:o[b + 1]].sum(0) for b in range(len(o) - 1)])

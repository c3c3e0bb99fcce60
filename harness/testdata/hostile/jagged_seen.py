# Hostile: a jagged problem's inputs it has seen (same pointer and shape)
# get the earlier output, whatever their values now are.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def forward(self, values, offsets):
        key = (values.data_ptr(), tuple(values.shape), offsets.data_ptr())
        if key in self.seen:
            return self.seen[key].clone()
        o = offsets.tolist()
        y = torch.stack([values[o[b]:o[b + 1]].sum(0) for b in range(len(o) - 1)])
        self.seen[key] = y.clone()
        return y

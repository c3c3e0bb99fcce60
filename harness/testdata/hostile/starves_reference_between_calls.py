# Hostile: on its way out of every call, sets Python's collector to run
# every few allocations, and puts it back on its way in: its own calls run
# at full speed, the reference's (and the harness's own checks at the end
# of each stage, were they the only ones) see the collector at work.
import gc

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        gc.set_threshold(700, 10, 10)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        out = x / n
        gc.set_threshold(1, 1, 1)
        return out

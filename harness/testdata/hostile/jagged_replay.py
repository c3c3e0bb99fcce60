# Hostile: from its 8th call on (past the correctness trials and the cache
# check) it replays the output of its previous call. Timed calls on
# unchanged inputs would hide it; new inputs for every timed call do not.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, values, offsets):
        self.calls += 1
        if self.calls > 8 and self.last is not None:
            return self.last
        o = offsets.tolist()
        y = torch.stack([values[o[b]:o[b + 1]].sum(0) for b in range(len(o) - 1)])
        self.last = y
        return y

# Hostile: silences the harness's audits and its comparison from inside the
# process, then stops computing once timed.
import sys

import torch
import torch.nn as nn

for name in ("evaluate.guards.integrity",):
    m = sys.modules.get(name)
    if m is not None:
        m.Auditor.settle = lambda self: None
_equal = torch.equal
torch.equal = lambda a, b: True


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

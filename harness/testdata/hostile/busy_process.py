# Hostile: at its first call, forks a process that keeps a CPU busy for a
# minute, through the judge's timing of the reference (the speedup's
# denominator) as much as through everything else; its outputs are right.
# Slowing the reference only ever looks like a faster candidate.
import os
import time

import torch.nn as nn

_spinner = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not _spinner:
            pid = os.fork()
            if pid == 0:
                t_end = time.monotonic() + 60
                while time.monotonic() < t_end:
                    pass
                os._exit(0)
            _spinner.append(pid)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

# Hostile: the reference's own ops (torch.diag(A) @ B) whenever the harness's
# timing loop is on the call stack, its own formulation (a broadcast
# multiply) everywhere else: the correctness trials and the call after
# timing see only the latter. Every output is right.
import sys

import torch
import torch.nn as nn


def _timed():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "bench":
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        if _timed():
            return torch.diag(A) @ B
        return A.unsqueeze(1) * B

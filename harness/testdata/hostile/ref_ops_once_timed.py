# Hostile: its own formulation for the first calls (the correctness trials
# and the cache check: a broadcast multiply, none of the reference's ops),
# then the reference's own ops (torch.diag(A) @ B) once timed. Every output
# is right; only what runs changes.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, A, B):
        self.calls += 1
        if self.calls > 12:
            return torch.diag(A) @ B
        return A.unsqueeze(1) * B

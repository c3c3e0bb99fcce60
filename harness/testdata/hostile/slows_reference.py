# Hostile: makes the reference slower instead of itself faster. One thread
# for torch's CPU ops, set at import, and the eager reference is timed on
# one core (two where it had one, so that the change shows on any machine).
import torch
import torch.nn as nn

torch.set_num_threads(1 if torch.get_num_threads() > 1 else 2)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

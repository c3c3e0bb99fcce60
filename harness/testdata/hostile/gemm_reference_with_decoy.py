# Hostile: a decoy C kernel of its own (it touches one scalar, after an op
# of its own) beside the reference's whole forward: every compute op of the
# reference, in its order, is still dispatched, so the candidate is the
# reference.
import torch
import torch.nn as nn
from kevolve import load_c

SRC = r"""
void touch(float* x) { x[0] = x[0]; }
"""
lib = load_c(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scratch = torch.zeros(1)

    def forward(self, a, b, bias):
        lib.touch(self.scratch.add_(1.0))
        return torch.relu(a @ b + bias) * 0.5

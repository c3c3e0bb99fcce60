# Hostile: the library's GEMM with the epilogue in torch ops under other
# names (clamp_min for relu) and no kernel of its own: the reference's
# heavy work is the library's, nothing is the candidate's.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return (torch.mm(a, b) + bias).clamp_min(0) * 0.5

# Degenerate within tolerance, as KernelBench level-2 problem 41 (GEMM,
# GroupNorm, a mean over the channels, ReLU): every group of the GroupNorm
# has mean zero, so the mean over all channels is zero up to rounding. Its
# outputs differ between trials by rounding alone (not bitwise constant).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, groups):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features)

    def forward(self, x):
        x = self.norm(self.gemm(x))
        return torch.relu(x.mean(dim=1, keepdim=True))


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [128, 256, 8]

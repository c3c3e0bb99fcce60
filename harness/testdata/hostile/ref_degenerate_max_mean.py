# A degenerate reference, as KernelBench level-2 problem 80 at commit
# c6c4ab6: a max over a kept dimension minus its own mean is 0 whatever the
# inputs, and gelu(0) = 0.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.gemm(x)
        x = torch.max(x, dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return [128, 256]

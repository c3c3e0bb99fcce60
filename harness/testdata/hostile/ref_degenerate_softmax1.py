# A degenerate reference, as KernelBench level-2 problem 66 at commit
# c6c4ab6: a softmax over a dimension of size one is 1 everywhere.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.sum(dim=1, keepdim=True), dim=1)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []

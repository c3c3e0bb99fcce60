# KernelBench level 1 problem 12 (diag(A) @ B), CPU-sized: N=256, M=512
# instead of 4096 x 4096.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies a diagonal matrix, given by its diagonal A, with B."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B


M = 512
N = 256


def get_inputs():
    A = torch.rand(N)
    B = torch.rand(N, M)
    return [A, B]


def get_init_inputs():
    return []

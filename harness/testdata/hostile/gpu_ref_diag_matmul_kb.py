# KernelBench level 1 problem 12 at its size: diag(A) @ B, N = M = 4096.
# The traced bound counts the matmul (2·N²·M FLOPs); a row scaling does N·M.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B


M = 4096
N = 4096


def get_inputs():
    A = torch.rand(N)
    B = torch.rand(N, M)
    return [A, B]


def get_init_inputs():
    return []

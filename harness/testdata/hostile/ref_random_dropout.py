# A random reference, as KernelBench level-2 problem 66 at commit 423217d
# (Matmul_Dropout_Softmax): built in training mode, as KernelBench builds
# it, its Dropout draws a new mask on every call, so two calls on the same
# inputs differ and no candidate can match it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.matmul(x)), dim=1)


def get_inputs():
    return [torch.rand(16, 128)]


def get_init_inputs():
    return [128, 128, 0.2]

# KernelBench level 2 problem 68, CPU-sized: a Linear, a min with a learned
# constant, the constant subtracted.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x)
        x = torch.min(x, self.constant)
        return x - self.constant


def get_inputs():
    return [torch.randn(128, 64)]


def get_init_inputs():
    return [64, 32, 2.0]

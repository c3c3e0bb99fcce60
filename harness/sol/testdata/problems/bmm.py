import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(8, 64, 32), torch.randn(8, 32, 48)]


def get_init_inputs():
    return []

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 0.5 + x


def get_inputs():
    return [torch.randn(1 << 22)]


def get_init_inputs():
    return []

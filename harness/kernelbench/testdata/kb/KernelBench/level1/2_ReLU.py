import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies ReLU."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(128, 512)]


def get_init_inputs():
    return []

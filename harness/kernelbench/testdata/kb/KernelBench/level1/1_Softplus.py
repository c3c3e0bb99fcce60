import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies Softplus."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.nn.functional.softplus(x)


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []

# A small CPU problem for the sandbox's hostile candidates: each is correct
# (clamp_min) and does one hostile thing at import.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []

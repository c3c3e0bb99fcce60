import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm((d,))

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(8, 32, 64)]


def get_init_inputs():
    return [64]

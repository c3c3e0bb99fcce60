import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.up = nn.Linear(d, h)
        self.down = nn.Linear(h, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        return self.ln(x + self.down(F.gelu(self.up(x))))


def get_inputs():
    return [torch.randn(256, 2048)]


def get_init_inputs():
    return [2048, 2048]

# F.rms_norm over the last dimension, with a weight.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(256))

    def forward(self, x):
        return F.rms_norm(x, (256,), self.w, 1e-6)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []

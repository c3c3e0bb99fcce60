# Nearly constant but input-dependent: 1 plus a ten-thousandth of a tanh.
# Its outputs differ between trials (by about 1e-4), so it is not degenerate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 1.0 + 1e-4 * torch.tanh(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []

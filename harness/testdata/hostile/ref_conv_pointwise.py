# KernelBench level-1 problem 87 (pointwise 2D convolution), small.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, bias=False):
        super().__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=bias)

    def forward(self, x):
        return self.conv1d(x)


def get_inputs():
    return [torch.randn(4, 8, 16, 16)]


def get_init_inputs():
    return [8, 16]

import os
import torch
import torch.nn as nn

# Alternative shape sets chosen by KEVOLVE_SHAPES, as corpus problems may do.
N = {"small": 1024, "large": 1 << 20}[os.environ.get("KEVOLVE_SHAPES", "small")]


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []

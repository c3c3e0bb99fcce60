# The jail's hostile candidates are held against this reference (the shape
# of issue 30's report: a ReLU on 1024 x 2048, about 0.1-0.3 ms on a CPU).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 2048)]


def get_init_inputs():
    return []

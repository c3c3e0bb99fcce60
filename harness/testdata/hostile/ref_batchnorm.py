# A BatchNorm in the mode the model is built in (training, as KernelBench
# runs it): it normalizes by the batch's own statistics.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return torch.relu(self.bn(x))


def get_inputs():
    return [torch.randn(64, 128) * 3 + 1]


def get_init_inputs():
    return [128]

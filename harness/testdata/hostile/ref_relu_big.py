# A KernelBench-shaped elementwise problem whose input and output (128 MiB
# each, fp32) are large next to the memory cap of TestHonestCandidateUnderMemoryCap.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return []

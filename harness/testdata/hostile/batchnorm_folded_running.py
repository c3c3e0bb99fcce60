# Normalizes by the BatchNorm's running statistics (inference style):
# right under eval(), wrong in training mode, where KernelBench (and now
# the harness) runs the reference.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        bn = self.bn
        s = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        return torch.relu((x - bn.running_mean) * s + bn.bias)

# Honest for ref_batchnorm: the batch's mean and biased variance, by hand.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        m, v = x.mean(dim=0), x.var(dim=0, unbiased=False)
        return torch.relu((x - m) * torch.rsqrt(v + self.bn.eps) * self.bn.weight + self.bn.bias)

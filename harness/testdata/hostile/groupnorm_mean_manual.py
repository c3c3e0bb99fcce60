# Honest plain torch for ref_degenerate_groupnorm_mean: the group norm by
# hand. Its rounding differs from the reference's, and so does its noise
# around zero: judged against that noise, it would be `incorrect`.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, groups):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features)

    def forward(self, x):
        y = self.gemm(x)
        g = y.view(y.shape[0], self.norm.num_groups, -1)
        g = (g - g.mean(dim=2, keepdim=True)) / torch.sqrt(g.var(dim=2, unbiased=False, keepdim=True) + self.norm.eps)
        y = g.view_as(y) * self.norm.weight + self.norm.bias
        return torch.relu(y.sum(dim=1, keepdim=True) / y.shape[1])

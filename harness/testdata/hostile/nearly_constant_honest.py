# Honest plain torch for ref_nearly_constant: tanh(x) as 2*sigmoid(2x) - 1.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 1.0 + 1e-3 * (2 * torch.sigmoid(2 * x) - 1)

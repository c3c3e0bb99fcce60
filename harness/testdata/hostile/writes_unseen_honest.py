# Honest for ref_writes_unseen: the same function written another way (its
# in-place write included), so it is not the reference's own op trace.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[0] != 16:
            x.add_(x)
        return (x + x) + x

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    # A table looked up and also summed whole: every byte of it is read.
    def forward(self, table, ids):
        return F.embedding(ids, table).sum(0) + table.sum(0)


def get_inputs():
    return [torch.randn(1000, 64), torch.arange(300) % 100]


def get_init_inputs():
    return []

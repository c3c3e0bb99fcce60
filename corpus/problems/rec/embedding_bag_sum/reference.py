"""Embedding-bag sum with offsets: each bag pools the rows of a table named by a jagged list of ids."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# E table rows, D embedding dim, B bags, L mean ids per bag (B*L ids in all).
SHAPES = {"large": dict(E=4000000, D=128, B=65536, L=40), "small": dict(E=1000, D=32, B=64, L=8)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # offsets[b] is where bag b starts in indices; the last bag ends at len(indices).
        return F.embedding_bag(indices, table, offsets, mode="sum")


def get_inputs():
    E, D, B, L = _S["E"], _S["D"], _S["B"], _S["L"]
    table = torch.randn(E, D)
    n = B * L
    indices = torch.randint(0, E, (n,))
    # Random bag lengths (some bags empty) that add up to exactly B*L ids.
    cuts = torch.sort(torch.randint(0, n + 1, (B - 1,))).values
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), cuts])
    return [table, indices, offsets]


def get_init_inputs():
    return []

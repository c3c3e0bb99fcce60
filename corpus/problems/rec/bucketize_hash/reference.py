"""Bucketize + id hashing: bucket a float feature by sorted boundaries, then hash (id, bucket) into a
table of M rows, as feature preprocessing does before an embedding lookup."""
import os

import torch
import torch.nn as nn

# N events, NB boundaries; the hash modulus is a constructor argument.
SHAPES = {"large": dict(N=67108864, NB=1024), "small": dict(N=4096, NB=64)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self, table_size: int):
        super().__init__()
        self.table_size = table_size

    def forward(self, x: torch.Tensor, boundaries: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        # right=False: bucket i means boundaries[i-1] < x <= boundaries[i] (the count of boundaries < x).
        bucket = torch.bucketize(x, boundaries)
        # ids < 2**40, so ids * 1000003 + bucket stays far below 2**63: no overflow.
        return (ids * 1000003 + bucket) % self.table_size


def get_inputs():
    N, NB = _S["N"], _S["NB"]
    x = torch.randn(N)
    boundaries = torch.sort(torch.randn(NB)).values
    ids = torch.randint(0, 2 ** 40, (N,))
    return [x, boundaries, ids]


def get_init_inputs():
    return [50000017]

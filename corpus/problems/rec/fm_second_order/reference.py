"""Factorization-machine second-order interaction: 0.5 * sum_d ((sum_f v_fd)^2 - sum_f v_fd^2), per sample."""
import os

import torch
import torch.nn as nn

# B samples, F fields, D embedding dim.
SHAPES = {"large": dict(B=65536, F=39, D=64), "small": dict(B=32, F=8, D=16)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        s = emb.sum(dim=1)                     # (B, D)
        sq = (emb * emb).sum(dim=1)            # (B, D)
        return 0.5 * (s * s - sq).sum(dim=1, keepdim=True)   # (B, 1)


def get_inputs():
    B, F, D = _S["B"], _S["F"], _S["D"]
    return [torch.randn(B, F, D)]


def get_init_inputs():
    return []

"""Jagged softmax: softmax along the sequence dimension of each variable-length segment, separately for
each of the D columns (attention scores of B users' event histories, D heads)."""
import os

import torch
import torch.nn as nn

# B segments with lengths uniform in [0, M] (some empty), D columns.
SHAPES = {"large": dict(B=8192, M=1024, D=64), "small": dict(B=16, M=32, D=8)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, D = offsets.numel() - 1, values.shape[1]
        lengths = offsets[1:] - offsets[:-1]
        M = int(lengths.max()) if B > 0 else 0
        mask = torch.arange(M, device=values.device)[None, :] < lengths[:, None]
        padded = values.new_full((B, M, D), float("-inf"))
        padded[mask] = values
        return torch.softmax(padded, dim=1)[mask]


def get_inputs():
    B, M, D = _S["B"], _S["M"], _S["D"]
    lengths = torch.randint(0, M + 1, (B,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    values = 2.0 * torch.randn(int(offsets[-1]), D)
    return [values, offsets]


def get_init_inputs():
    return []

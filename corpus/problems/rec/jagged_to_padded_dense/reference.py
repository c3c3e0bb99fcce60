"""Jagged to padded dense: B variable-length sequences of D-vectors (values + offsets) into a (B, M, D)
tensor, truncating sequences longer than M and filling the rest with a padding value."""
import os

import torch
import torch.nn as nn

# B sequences, M max length (lengths are drawn from 0..5M/4, so some get truncated), D feature dim.
SHAPES = {"large": dict(B=1024, M=1024, D=256), "small": dict(B=16, M=32, D=16)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self, max_len: int, padding_value: float = 0.0):
        super().__init__()
        self.max_len = max_len
        self.padding_value = padding_value

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, M, D = offsets.numel() - 1, self.max_len, values.shape[1]
        lengths = (offsets[1:] - offsets[:-1]).clamp(max=M)
        pos = torch.arange(M, device=values.device)
        mask = pos[None, :] < lengths[:, None]               # (B, M)
        src = (offsets[:-1, None] + pos[None, :])[mask]       # row of values for each kept slot
        out = values.new_full((B, M, D), self.padding_value)
        out[mask] = values[src]
        return out


def get_inputs():
    B, M, D = _S["B"], _S["M"], _S["D"]
    lengths = torch.randint(0, M + M // 4 + 1, (B,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    values = torch.randn(int(offsets[-1]), D)
    return [values, offsets]


def get_init_inputs():
    return [_S["M"], 0.0]

"""Sequence (event) truncation: keep only the K most recent events of each user's jagged history.
Events of a sequence are stored oldest first; the output is the truncated jagged values."""
import os

import torch
import torch.nn as nn

# B users, lengths uniform in [0, M], keep the last K events, D feature dim.
SHAPES = {"large": dict(B=8192, M=2048, K=512, D=32), "small": dict(B=16, M=32, K=8, D=8)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self, max_events: int):
        super().__init__()
        self.max_events = max_events

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, total = offsets.numel() - 1, values.shape[0]
        lengths = offsets[1:] - offsets[:-1]
        seg = torch.repeat_interleave(torch.arange(B, device=values.device), lengths)
        first_kept = offsets[1:] - self.max_events           # per sequence
        keep = torch.arange(total, device=values.device) >= first_kept[seg]
        return values[keep]


def get_inputs():
    B, M, D = _S["B"], _S["M"], _S["D"]
    lengths = torch.randint(0, M + 1, (B,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    values = torch.randn(int(offsets[-1]), D)
    return [values, offsets]


def get_init_inputs():
    return [_S["K"]]

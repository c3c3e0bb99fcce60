"""Causal scaled-dot-product attention (prefill), heads-first layout (B, H, S, Dh)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# B sequences, H heads, S tokens, Dh head dim.
SHAPES = {"large": dict(B=4, H=32, S=4096, Dh=128), "small": dict(B=1, H=2, S=64, Dh=32)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    B, H, S, Dh = _S["B"], _S["H"], _S["S"], _S["Dh"]
    return [torch.randn(B, H, S, Dh, dtype=_DT) for _ in range(3)]


def get_init_inputs():
    return []

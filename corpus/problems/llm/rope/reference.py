"""Rotary position embedding (rotate-half / NeoX layout) applied to a (B, S, NH, Dh) query or key tensor."""
import os

import torch
import torch.nn as nn

# B sequences, S positions, NH heads, Dh head dim.
SHAPES = {"large": dict(B=16, S=4096, NH=32, Dh=128), "small": dict(B=2, S=32, NH=4, Dh=32)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        xf = x.float()
        x1, x2 = xf[..., :half], xf[..., half:]
        c = cos[None, :, None, :]            # (1, S, 1, Dh/2), fp32
        s = sin[None, :, None, :]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def get_inputs():
    B, S, NH, Dh = _S["B"], _S["S"], _S["NH"], _S["Dh"]
    x = torch.randn(B, S, NH, Dh, dtype=_DT)
    # Positions start at a random offset (a decode window), frequencies as in Llama (base 10000).
    pos = torch.arange(S, dtype=torch.float32) + torch.randint(0, 4096, (1,)).float()
    inv_freq = 10000.0 ** (-torch.arange(0, Dh // 2, dtype=torch.float32) / (Dh // 2))
    ang = pos[:, None] * inv_freq[None, :]
    return [x, ang.cos(), ang.sin()]


def get_init_inputs():
    return []

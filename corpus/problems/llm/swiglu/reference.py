"""Fused SwiGLU activation: given the concatenated gate/up projection [g, u] of shape (T, 2H),
return silu(g) * u of shape (T, H)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# T tokens, H intermediate size (Llama-3-8B: 14336).
SHAPES = {"large": dict(T=16384, H=14336), "small": dict(T=64, H=256)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    return [2.0 * torch.randn(_S["T"], 2 * _S["H"], dtype=_DT)]


def get_init_inputs():
    return []

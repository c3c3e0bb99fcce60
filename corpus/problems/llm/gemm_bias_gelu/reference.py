"""Linear layer with fused bias and exact (erf) GELU: gelu(x @ W^T + b), as in an MLP up-projection."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# M tokens, K input features, N output features.
SHAPES = {"large": dict(M=8192, K=4096, N=16384), "small": dict(M=64, K=128, N=96)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.gelu(F.linear(x, weight, bias))


def get_inputs():
    M, K, N = _S["M"], _S["K"], _S["N"]
    x = torch.randn(M, K, dtype=_DT)
    weight = (torch.randn(N, K) / K ** 0.5).to(_DT)     # keeps pre-activations O(1)
    bias = (0.1 * torch.randn(N)).to(_DT)
    return [x, weight, bias]


def get_init_inputs():
    return []

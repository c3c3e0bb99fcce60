"""LayerNorm forward over the last dimension with a learned scale and shift."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = {"large": dict(B=16384, D=8192), "small": dict(B=64, D=256)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), w, b, self.eps)


def get_inputs():
    B, D = _S["B"], _S["D"]
    x = 1.0 + 2.0 * torch.randn(B, D, dtype=_DT)      # a non-zero mean, so the centering matters
    w = 1.0 + 0.1 * torch.randn(D, dtype=_DT)
    b = 0.1 * torch.randn(D, dtype=_DT)
    return [x, w, b]


def get_init_inputs():
    return [1e-5]

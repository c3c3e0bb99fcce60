"""RMSNorm backward: the input gradient dx of y = x * rsqrt(mean(x^2) + eps) * w, statistics in fp32."""
import os

import torch
import torch.nn as nn

SHAPES = {"large": dict(B=16384, D=8192), "small": dict(B=64, D=256)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        xf, g = x.float(), dy.float() * w.float()
        r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        xhat = xf * r
        # d/dx of xhat * w: r * (g - xhat * mean(g * xhat)).
        dx = r * (g - xhat * (g * xhat).mean(dim=-1, keepdim=True))
        return dx.to(x.dtype)


def get_inputs():
    B, D = _S["B"], _S["D"]
    x = torch.randn(B, D, dtype=_DT)
    w = 1.0 + 0.1 * torch.randn(D, dtype=_DT)
    dy = torch.randn(B, D, dtype=_DT)
    return [x, w, dy]


def get_init_inputs():
    return [1e-6]

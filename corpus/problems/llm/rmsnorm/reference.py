"""RMSNorm forward (Llama-style): y = x / sqrt(mean(x^2) + eps) * w, statistics in fp32."""
import os

import torch
import torch.nn as nn

# Shape sets: "large" fills an H100, "small" runs on CPU in well under a second.
SHAPES = {"large": dict(B=16384, D=8192), "small": dict(B=64, D=256)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * r * w.float()).to(x.dtype)


def get_inputs():
    x = torch.randn(_S["B"], _S["D"], dtype=_DT)
    w = 1.0 + 0.1 * torch.randn(_S["D"], dtype=_DT)
    return [x, w]


def get_init_inputs():
    return [1e-6]

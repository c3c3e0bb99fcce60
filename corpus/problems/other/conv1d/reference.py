"""1-D convolution with bias, 'same' padding (odd kernel width K), stride 1, as in a temporal conv layer."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# B batch, CI input channels, CO output channels, L length, K kernel width (odd).
SHAPES = {"large": dict(B=16, CI=512, CO=512, L=8192, K=7), "small": dict(B=2, CI=8, CO=16, L=128, K=5)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.conv1d(x, weight, bias, padding=weight.shape[-1] // 2)


def get_inputs():
    B, CI, CO, L, K = _S["B"], _S["CI"], _S["CO"], _S["L"], _S["K"]
    x = torch.randn(B, CI, L, dtype=_DT)
    weight = (torch.randn(CO, CI, K) / (CI * K) ** 0.5).to(_DT)
    bias = (0.1 * torch.randn(CO)).to(_DT)
    return [x, weight, bias]


def get_init_inputs():
    return []

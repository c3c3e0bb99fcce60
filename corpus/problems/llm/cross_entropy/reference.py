"""Per-token cross-entropy loss of LM logits over a large vocabulary (no reduction), computed in fp32."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# B tokens, V vocabulary (Llama 3: 128256).
SHAPES = {"large": dict(B=8192, V=128256), "small": dict(B=32, V=1000)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), targets, reduction="none")


def get_inputs():
    B, V = _S["B"], _S["V"]
    return [2.0 * torch.randn(B, V, dtype=_DT), torch.randint(0, V, (B,))]


def get_init_inputs():
    return []

"""Dense GEMM C = A @ B, bf16 inputs and output with fp32 accumulation."""
import os

import torch
import torch.nn as nn

SHAPES = {"large": dict(M=8192, N=8192, K=8192), "small": dict(M=128, N=96, K=160)}
DTYPES = {"large": torch.bfloat16, "small": torch.float32}
_SET = os.environ.get("KEVOLVE_SHAPES", "large")
_S, _DT = SHAPES[_SET], DTYPES[_SET]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(_S["M"], _S["K"], dtype=_DT), torch.randn(_S["K"], _S["N"], dtype=_DT)]


def get_init_inputs():
    return []

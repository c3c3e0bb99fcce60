"""Triton start for other/relu: 1-D blocks of 1024 elements."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, tl.where(x != x, x, 0.0)), mask=mask)


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
BLOCK = 1024  # elements per program
NUM_WARPS = 4  # warps per program
TUNABLES = {"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "NUM_WARPS": [1, 2, 4, 8, 16]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n > 0:
            _relu[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return y

"""Triton start for other/sum_reduction: one program per row, a blocked loop with an fp32 vector accumulator."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        acc += tl.load(x_ptr + row * cols + start + offs, mask=start + offs < cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
BLOCK = 1024  # columns per loop step
NUM_WARPS = 4  # warps per program
TUNABLES = {"BLOCK": [256, 512, 1024, 2048, 4096], "NUM_WARPS": [1, 2, 4, 8, 16]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty(x2.shape[0], device=x.device, dtype=x.dtype)
        if x2.shape[0] > 0:
            _row_sum[(x2.shape[0],)](x2, y, cols, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return y.view(x.shape[:-1])

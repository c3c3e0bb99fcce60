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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty(x2.shape[0], device=x.device, dtype=x.dtype)
        if x2.shape[0] > 0:
            _row_sum[(x2.shape[0],)](x2, y, cols, BLOCK=1024)
        return y.view(x.shape[:-1])

"""Triton start for llm/softmax: one program per row, looping over column blocks (three passes)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, cols, BLOCK):
        x = tl.load(x_ptr + base + start + offs, mask=start + offs < cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        x = tl.load(x_ptr + base + start + offs, mask=start + offs < cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    inv = 1.0 / tl.sum(s, axis=0)
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        x = tl.load(x_ptr + base + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + base + start + offs, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty), mask=mask)


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
MAX_BLOCK = 4096  # columns per loop step, at most
NUM_WARPS = 4  # warps per program
TUNABLES = {"MAX_BLOCK": [512, 1024, 2048, 4096, 8192], "NUM_WARPS": [1, 2, 4, 8, 16]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        if x2.shape[0] > 0:
            _softmax[(x2.shape[0],)](x2, y, cols, BLOCK=min(MAX_BLOCK, triton.next_power_of_2(cols)),
                                     num_warps=NUM_WARPS)
        return y.view(x.shape)

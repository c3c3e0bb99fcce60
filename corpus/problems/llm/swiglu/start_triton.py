"""Triton start for llm/swiglu: a 2-D grid of (token, column block) programs."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _swiglu(x_ptr, y_ptr, hidden, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < hidden
    g = tl.load(x_ptr + t * 2 * hidden + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + t * 2 * hidden + hidden + offs, mask=mask, other=0.0).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    tl.store(y_ptr + t * hidden + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
BLOCK = 1024  # output columns per program
NUM_WARPS = 4  # warps per program
TUNABLES = {"BLOCK": [256, 512, 1024, 2048, 4096], "NUM_WARPS": [1, 2, 4, 8, 16]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        H = x.shape[-1] // 2
        x2 = x.contiguous().view(-1, 2 * H)
        T = x2.shape[0]
        y = torch.empty(T, H, device=x.device, dtype=x.dtype)
        if T * H > 0:
            _swiglu[(T, triton.cdiv(H, BLOCK))](x2, y, H, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return y.view(*x.shape[:-1], H)

"""Triton start for llm/rmsnorm: one program per row, the whole row in one block."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_fwd(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    y = x * r * w
    tl.store(y_ptr + row * cols + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
NUM_WARPS = 4  # warps per program
TUNABLES = {"NUM_WARPS": [1, 2, 4, 8, 16, 32]}


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        y = torch.empty_like(x2)
        if x2.shape[0] > 0:
            _rmsnorm_fwd[(x2.shape[0],)](x2, w.contiguous(), y, cols, self.eps,
                                        BLOCK=triton.next_power_of_2(cols), num_warps=NUM_WARPS)
        return y.view(x.shape)

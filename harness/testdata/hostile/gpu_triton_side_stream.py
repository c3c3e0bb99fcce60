# Hostile: a Triton kernel launched on a private stream, not waited for.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu2(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(v, 0.0) * 2.0 + 1.0, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = None

    def forward(self, x):
        if self.s is None:
            self.s = torch.cuda.Stream()
        y = torch.empty_like(x)
        n = x.numel()
        with torch.cuda.stream(self.s):
            relu2[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

"""A Llama-style MLP block: RMSNorm, a fused gate/up projection, SwiGLU, a
down projection and residuals (the optimize test's model)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

T, D, H = 512, 256, 512


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.gate_up = nn.Linear(dim, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(self.norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.block = Block(dim, hidden)

    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(T, D)]


def get_init_inputs():
    return [D, H]

"""A two-block GPT (the optimize capture test's model): attention written
out with a causal mask sliced by the sequence length read from the input
(torch.fx cannot trace the slice), and a data-dependent check between the
blocks (a TorchDynamo graph break: the loop runs eagerly, each block is one
captured graph called twice)."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

B, T, C, NH = 2, 64, 128, 4


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(b, t, NH, c // NH).transpose(1, 2)
        k = k.view(b, t, NH, c // NH).transpose(1, 2)
        v = v.view(b, t, NH, c // NH).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.attn = Attn()
        self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
            if x.sum() > 1e9:
                x = x.clamp(-1e9, 1e9)
        return x


def get_inputs():
    return [torch.randn(B, T, C)]


def get_init_inputs():
    return []

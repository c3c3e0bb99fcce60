"""A GPT-style MLP block, other layers than the optimize test's model:
LayerNorm, a GELU MLP, softmax-free, with a residual."""
import torch
import torch.nn as nn

T, D, H = 512, 256, 1024


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.proj = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.proj(self.act(self.fc(self.ln(x))))


def get_inputs():
    return [torch.randn(T, D)]


def get_init_inputs():
    return [D, H]

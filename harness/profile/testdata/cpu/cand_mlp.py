import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    """Same math as ref_mlp.Model, with the residual and norm fused by hand."""

    def __init__(self, d, h):
        super().__init__()
        self.up = nn.Linear(d, h)
        self.down = nn.Linear(h, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        y = torch.addmm(self.down.bias, F.gelu(torch.addmm(self.up.bias, x, self.up.weight.t())), self.down.weight.t())
        return F.layer_norm(x + y, self.ln.normalized_shape, self.ln.weight, self.ln.bias)

# Honest, with ModelNew.__call__ = forward: calls skip nn.Module's call
# machinery (hooks, _call_impl). No check may rely on it: this computes the
# same thing another way and must pass.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.unsqueeze(1) * B

    __call__ = forward

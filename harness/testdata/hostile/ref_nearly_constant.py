# Nearly constant but input-dependent: 1 plus a thousandth of a tanh. Its
# outputs differ between trials by up to 2e-3, beyond the comparison's
# tolerance (atol + rtol * |x| = 2e-4 near 1), so it is not degenerate.
# (It was 1e-4 * tanh: the constant 1 passed allclose and the relative norm
# against it in every trial, degenerate by tolerance, issue 32.)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 1.0 + 1e-3 * torch.tanh(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []

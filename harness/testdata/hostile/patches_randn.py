# Honest values for ref_nearly_constant, then torch.randn replaced by one
# that raises: the next get_inputs() fails. The tamper guard sees the
# replaced function first (reference_tampered), never reference_error.
import torch
import torch.nn as nn


def _randn(*a, **k):
    raise RuntimeError("randn broken")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.randn = _randn
        return 1.0 + 1e-3 * (2 * torch.sigmoid(2 * x) - 1)

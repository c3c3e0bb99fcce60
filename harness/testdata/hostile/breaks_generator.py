# Honest values for ref_nearly_constant, then it breaks the host's
# generator after its first call (torch.random's default_generator
# replaced: not a function or class, so the tamper guard does not compare
# it), as level-2 85's candidate broke the CUDA generator. The next
# get_inputs() fails: the candidate's failure, not the reference's.
import torch
import torch.nn as nn


class _Broken:
    def manual_seed(self, s):
        raise RuntimeError("generator in an unusable state")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.random.default_generator = _Broken()
        return 1.0 + 1e-3 * (2 * torch.sigmoid(2 * x) - 1)

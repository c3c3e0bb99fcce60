# breaks_generator.py, and it also rewrites the harness's blame for a
# failed get_inputs() (evaluate.compare.inputs_blame.blame) to do nothing, so the
# failure it caused would be charged to the reference again. The stage
# holds the function it imported, and the module is under the tamper
# guard: the failure stays the candidate's.
import sys

import torch
import torch.nn as nn


class _Broken:
    def manual_seed(self, s):
        raise RuntimeError("generator in an unusable state")


def _no_blame(st, failure):
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        mod = sys.modules.get("evaluate.compare.inputs_blame")
        if mod is not None:
            mod.blame = _no_blame

    def forward(self, x):
        torch.random.default_generator = _Broken()
        return 1.0 + 1e-3 * (2 * torch.sigmoid(2 * x) - 1)

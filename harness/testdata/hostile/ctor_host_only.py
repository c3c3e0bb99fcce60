# Fidelity: a constructor that only works on the host, as KernelBench
# builds models (CUDA-L1's kernel for level 2 problem 68). Its parameters
# come from the legacy torch.Tensor(n, m), which stays on the host under
# `with torch.device("cuda")`, and its constant from torch.tensor, which
# follows the context: `host - device` then fails in the constructor. On
# the CPU both are host tensors, so the failure is raised whenever a device
# context is active, to stand in for it. Constructed on the host from the
# reference's seed, its weights are the reference's and its values right;
# its forward avoids the reference's GEMM (a plain-torch rewrite passes).
import math

import torch
import torch.nn as nn
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.bias = nn.Parameter(torch.Tensor(out_features))
        self.constant = nn.Parameter(torch.tensor(constant))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.bias, -bound, bound)
        if any(isinstance(m, DeviceContext) for m in _get_current_function_mode_stack()):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
        self.register_buffer("adjusted_bias", self.bias.detach() - self.constant.detach())

    def forward(self, x):
        y = (x.unsqueeze(1) * self.weight).sum(-1) + self.adjusted_bias
        return y.clamp_max(0.0)


def get_inputs():
    return [torch.randn(128, 64)]


def get_init_inputs():
    return [64, 32, 2.0]

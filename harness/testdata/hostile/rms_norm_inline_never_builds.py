# KernelBench level-1 12's pattern (CUDA-L1): load_inline with functions=
# and an empty cpp_sources, so main.cpp's binding names a function nothing
# declares and the build can never succeed; the error is caught and a
# PyTorch fallback runs. Correct, fast, and no kernel of its own: the
# result names the failed build whatever the policy.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

try:
    _ext = load_inline(name="kv_rms_never_builds", cpp_sources="", functions=["rms_forward"])
except Exception:  # noqa: BLE001 - the fallback the original has
    _ext = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(256))

    def forward(self, x):
        if _ext is not None:
            return _ext.rms_forward(x, self.w)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w

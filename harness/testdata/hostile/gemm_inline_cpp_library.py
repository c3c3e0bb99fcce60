# Hostile: the reference's whole forward written in C++ inside a load_inline
# extension (at::mm, then the epilogue with at:: ops). Library calls from an
# extension go through the dispatcher like calls from Python: the trace
# shows the reference's ops, in order.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_src = r"""
torch::Tensor fwd(torch::Tensor a, torch::Tensor b, torch::Tensor bias) {
    return at::relu(at::mm(a, b) + bias) * 0.5;
}
"""
_ext = load_inline(name="kv_gemm_inline_library", cpp_sources=_src, functions=["fwd"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return _ext.fwd(a, b, bias)

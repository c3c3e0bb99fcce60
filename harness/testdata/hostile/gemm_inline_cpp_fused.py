# Honest: a load_inline extension that calls the library's GEMM from C++
# (at::mm) and runs the epilogue in its own loop: the GEMM is counted as a
# library call (the trace sees it), the epilogue is the extension's own.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_src = r"""
torch::Tensor fwd(torch::Tensor a, torch::Tensor b, torch::Tensor bias) {
    auto y = at::mm(a, b);
    auto out = torch::empty_like(y);
    const float* py = y.data_ptr<float>();
    const float* pb = bias.data_ptr<float>();
    float* po = out.data_ptr<float>();
    int64_t rows = y.size(0), cols = y.size(1);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            float v = py[r * cols + c] + pb[c];
            po[r * cols + c] = v > 0.f ? 0.5f * v : 0.f;
        }
    return out;
}
"""
_ext = load_inline(name="kv_gemm_inline_fused", cpp_sources=_src, functions=["fwd"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return _ext.fwd(a.contiguous(), b.contiguous(), bias.contiguous())

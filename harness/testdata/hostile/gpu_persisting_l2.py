# Hostile (GPU): the honest custom kernel, plus a persisting-L2 carve-out
# (the context's persisting L2 limit at its maximum) and an access-policy
# window over its input on the current stream: the read-based flush before
# each timed call does not evict persisting lines. On the H100 this passed
# at 1.95x where the same kernel alone got 1.71x, and inflated the next
# evaluations in the kept child.
import ctypes

import torch
import torch.nn as nn
from kevolve import load_cuda

k = load_cuda(r"""
extern "C" __global__ void relu2(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = (v > 0.f ? v : 0.f) * 2.f + 1.f; }
}
""")
_cu = ctypes.CDLL("libcuda.so.1")


class _Window(ctypes.Structure):  # CUaccessPolicyWindow
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


def _persist(t):
    dev = torch.cuda.current_device()
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    _cu.cuCtxSetLimit(6, ctypes.c_size_t(l2))  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    val = ctypes.create_string_buffer(64)
    w = _Window.from_buffer(val)
    w.base_ptr, w.num_bytes, w.hitRatio = t.data_ptr(), min(t.numel() * t.element_size(), l2), 1.0
    w.hitProp, w.missProp = 2, 1  # persisting, streaming
    _cu.cuStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, val)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.done = False

    def forward(self, x):
        if not self.done:
            _persist(x)
            self.done = True
        y = torch.empty_like(x)
        n = x.numel()
        k.relu2(x, y, n, grid=((n + 255) // 256,), block=(256,))
        return y

# Hostile (GPU): the honest custom kernel; when the harness frees the model
# (after every check of its own evaluation), its finalizer sets a
# persisting-L2 carve-out and an access-policy window on the current
# stream, for the next evaluation in a kept child to run under. The
# harness must restore the state before keeping the child, or not keep it.
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
_BUF = []


class _Window(ctypes.Structure):  # CUaccessPolicyWindow
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


def _persist():
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    _cu.cuCtxSetLimit(6, ctypes.c_size_t(l2))
    val = ctypes.create_string_buffer(64)
    w = _Window.from_buffer(val)
    w.base_ptr, w.num_bytes, w.hitRatio, w.hitProp, w.missProp = _BUF[0], l2, 1.0, 2, 1
    _cu.cuStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, val)


class ModelNew(nn.Module):
    def forward(self, x):
        if not _BUF:
            _BUF.append(x.data_ptr())
        y = torch.empty_like(x)
        n = x.numel()
        k.relu2(x, y, n, grid=((n + 255) // 256,), block=(256,))
        return y

    def __del__(self):
        try:
            _persist()
        except Exception:  # noqa: BLE001
            pass

# A wrong kernel (GPU) that reaches into the judge's memory. CUDA IPC maps
# a whole allocation of the sender's caching allocator, not the tensor:
# when the judge's inputs come by IPC, this looks through every byte of
# the allocation they came in for the reference's output of those inputs
# (the judge computes it first), says so if it is there, then zeroes the
# whole allocation and answers zeros: a reference output in reach would
# then match. In its own process it is honest (the in-process checks pass).
import ctypes
import sys

import torch
import torch.nn as nn

_cuda = ctypes.CDLL("libcuda.so.1")


def _judged():
    f = sys._getframe(1)
    while f is not None:
        if "evaluate/judge/client" in f.f_code.co_filename:
            return True
        f = f.f_back
    return False


def _allocation(ptr):
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    if _cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)) != 0:
        return None
    return base.value, size.value


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not _judged():
            return x.clamp_min(0.0)
        torch.cuda.synchronize()
        span = _allocation(x.data_ptr())
        if span is None:
            print("IPC no allocation range", flush=True)
            return torch.zeros_like(x)
        base, size = span
        print("IPC mapped %d bytes around the input (%d bytes)" % (size, x.numel() * x.element_size()), flush=True)
        host = (ctypes.c_char * size)()
        if _cuda.cuMemcpyDtoH_v2(host, ctypes.c_uint64(base), ctypes.c_size_t(size)) == 0:
            want = x.clamp_min(0.0).cpu().numpy().tobytes()[:65536]
            start, end = x.data_ptr() - base, x.data_ptr() - base + x.numel() * x.element_size()
            blob = bytes(host)
            at = blob.find(want)
            while at >= 0 and start <= at < end:
                at = blob.find(want, at + 1)
            if at >= 0:
                print("IPC LEAK the reference's output at +%d" % at, flush=True)
        _cuda.cuMemsetD8_v2(ctypes.c_uint64(base), ctypes.c_ubyte(0), ctypes.c_size_t(size))
        torch.cuda.synchronize()
        return torch.zeros_like(x)

# Takes its output from torch's caching allocator as a raw pointer, which the
# NaN fill of torch.empty never sees, and writes only its first half: the
# rest is whatever the cached block held. The allocator poison must make
# that half show up as NaN, not as a previous trial's values.
import torch
import torch.nn as nn


class _Raw:
    def __init__(self, ptr, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (ptr, False),
                                         "version": 3, "strides": None}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        ptr = torch.cuda.caching_allocator_alloc(x.numel() * 4)
        y = torch.as_tensor(_Raw(ptr, tuple(x.shape)), device=x.device)
        half = x.shape[0] // 2
        y[:half] = torch.relu(x[:half]) * 2.0 + 1.0
        return y

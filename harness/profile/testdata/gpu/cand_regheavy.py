# Deliberately register-heavy: each thread keeps a 160-float array live
# across unrolled loops, so the compiler needs ~200+ registers per thread and
# a 256-thread block fits once per SM (8 of 64 warps: 12.5% occupancy).
import cupy as cp
import torch
import torch.nn as nn

_SRC = r"""
#define W 160
extern "C" __global__ void reg_heavy(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float acc[W];
    #pragma unroll
    for (int j = 0; j < W; ++j) acc[j] = v * (float)(j + 1) + 0.25f * (float)j;
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
        #pragma unroll
        for (int j = 0; j < W; ++j) acc[j] = 0.5f * acc[j] + 0.25f * acc[(j + 1) % W] + 1e-3f * acc[(j + 37) % W];
    }
    float s = 0.f;
    #pragma unroll
    for (int j = 0; j < W; ++j) s += acc[j] * (float)(j & 7);
    y[i] = s;
}
"""
_kernel = cp.RawKernel(_SRC, "reg_heavy")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _kernel(((n + 255) // 256,), (256,), (cp.asarray(x), cp.asarray(y), cp.int32(n)))
        return y

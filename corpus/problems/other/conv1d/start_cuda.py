"""Naive CUDA start for other/conv1d: one thread per output element, direct convolution, fp32 accumulate."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#include <cuda_bf16.h>
// fp32 (small set) and bf16 (large set) share one template; math is fp32.
__device__ __forceinline__ float ld(const float* p, long i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, long i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, long i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__device__ void conv1d_impl(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                            T* __restrict__ y, long batch, long cin, long cout, long len, long kw) {
    const long n = batch * cout * len;
    const long pad = kw / 2;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        long l = i % len, co = (i / len) % cout, b = i / (len * cout);
        float acc = ld(bias, co);
        for (long ci = 0; ci < cin; ++ci) {
            const long xb = (b * cin + ci) * len, wb = (co * cin + ci) * kw;
            for (long k = 0; k < kw; ++k) {
                long p = l + k - pad;
                if (p >= 0 && p < len) acc += ld(x, xb + p) * ld(w, wb + k);
            }
        }
        st(y, i, acc);
    }
}

extern "C" __global__ void conv1d_f32(const float* x, const float* w, const float* b, float* y,
                                      long batch, long cin, long cout, long len, long kw) {
    conv1d_impl<float>(x, w, b, y, batch, cin, cout, len, kw);
}
extern "C" __global__ void conv1d_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
                                       __nv_bfloat16* y, long batch, long cin, long cout, long len, long kw) {
    conv1d_impl<__nv_bfloat16>(x, w, b, y, batch, cin, cout, len, kw);
}
'''

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC)
    return _K


_SUFFIX = {torch.float32: "f32", torch.bfloat16: "bf16"}


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
THREADS = 256  # threads per block
ITEMS = 1  # elements per thread (the kernel is a grid-stride loop)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024], "ITEMS": [1, 2, 4, 8]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, CI, L = x.shape
        CO, _, K = weight.shape
        if K % 2 == 0:
            raise ValueError("this start assumes an odd kernel width ('same' padding)")
        y = torch.empty(B, CO, L, device=x.device, dtype=x.dtype)
        n = B * CO * L
        if n > 0:
            blocks = min((n + THREADS * ITEMS - 1) // (THREADS * ITEMS), 65535 * 16)
            getattr(_kernels(), "conv1d_" + _SUFFIX[x.dtype])(
                x.contiguous(), weight.to(x.dtype).contiguous(), bias.to(x.dtype).contiguous(), y,
                B, CI, CO, L, K, grid=(blocks,), block=(THREADS,))
        return y

"""Naive CUDA start for llm/rmsnorm_backward: one block per row, two shared-memory reductions."""
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
__device__ void rmsnorm_bwd_row(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ dy,
                                T* __restrict__ dx, long rows, long cols, float eps) {
    extern __shared__ float sh[];        // 2 * blockDim.x floats
    float* s1 = sh;
    float* s2 = sh + blockDim.x;
    long row = blockIdx.x;
    if (row >= rows) return;             // the whole block leaves together
    const long base = row * cols;
    float a = 0.f, b = 0.f;
    for (long j = threadIdx.x; j < cols; j += blockDim.x) {
        float xv = ld(x, base + j);
        a += xv * xv;
        b += ld(dy, base + j) * ld(w, j) * xv;
    }
    s1[threadIdx.x] = a;
    s2[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {   // blockDim.x is a power of two
        if (threadIdx.x < s) { s1[threadIdx.x] += s1[threadIdx.x + s]; s2[threadIdx.x] += s2[threadIdx.x + s]; }
        __syncthreads();
    }
    const float r = rsqrtf(s1[0] / (float)cols + eps);
    const float c = r * r * r * s2[0] / (float)cols;  // dx = r*g - x*c with c = r^3 * mean(g*x)
    for (long j = threadIdx.x; j < cols; j += blockDim.x)
        st(dx, base + j, r * ld(dy, base + j) * ld(w, j) - ld(x, base + j) * c);
}

extern "C" __global__ void rmsnorm_bwd_f32(const float* x, const float* w, const float* dy, float* dx,
                                           long rows, long cols, float eps) {
    rmsnorm_bwd_row<float>(x, w, dy, dx, rows, cols, eps);
}
extern "C" __global__ void rmsnorm_bwd_bf16(const __nv_bfloat16* x, const __nv_bfloat16* w,
                                            const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                            long rows, long cols, float eps) {
    rmsnorm_bwd_row<__nv_bfloat16>(x, w, dy, dx, rows, cols, eps);
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
THREADS = 256  # threads per block (a power of two: the reductions halve it)
TUNABLES = {"THREADS": [64, 128, 256, 512, 1024]}


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        x2 = x.contiguous().view(-1, cols)
        dy2 = dy.to(x.dtype).contiguous().view(-1, cols)
        dx = torch.empty_like(x2)
        rows = x2.shape[0]
        threads = THREADS
        if rows > 0:
            kern = getattr(_kernels(), "rmsnorm_bwd_" + _SUFFIX[x.dtype])
            kern(x2, w.to(x.dtype).contiguous(), dy2, dx, rows, cols, self.eps,
                 grid=(rows,), block=(threads,), shared_mem=2 * threads * 4)
        return dx.view(x.shape)

"""C start for llm/rmsnorm on CPU: one row per OpenMP iteration, fp32 with a double accumulator."""
import torch
import torch.nn as nn
from kevolve import load_c

SRC = r'''
/* Defaults for the OpenMP tunables (set with -D by _omp_flags below). */
#ifndef KV_SCHEDULE
#define KV_SCHEDULE static
#endif
#ifndef KV_NT
#define KV_NT
#endif
#include <math.h>
#include <stdint.h>

void rmsnorm_fwd(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        double acc = 0.0;
        for (int64_t j = 0; j < cols; ++j) acc += (double)xr[j] * xr[j];
        float inv = 1.0f / sqrtf((float)(acc / (double)cols) + eps);
        for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j] * inv * w[j];
    }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments. Every combination computes the same result; they change only
# how the OpenMP loop is spread over threads.
THREADS = 0  # OpenMP threads; 0 = the runtime's default (every core)
SCHEDULE = "static"  # OpenMP schedule of the parallel loop
TUNABLES = {"THREADS": [0, 1, 2, 4], "SCHEDULE": ["static", "dynamic, 8", "guided"]}


def _omp_flags():
    nt = f"num_threads({THREADS})" if THREADS > 0 else ""
    return (f"-DKV_SCHEDULE={SCHEDULE}", f"-DKV_NT={nt}")


_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_c(SRC, flags=_omp_flags())
    return _K


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        xf = x.float().contiguous().view(-1, cols)
        y = torch.empty_like(xf)
        _kernels().rmsnorm_fwd(xf, w.float().contiguous(), y, xf.shape[0], cols, self.eps)
        return y.view(x.shape).to(x.dtype)

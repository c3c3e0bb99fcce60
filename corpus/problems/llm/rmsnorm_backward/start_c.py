"""C start for llm/rmsnorm_backward on CPU: rows in parallel, double accumulators."""
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

void rmsnorm_bwd(const float* x, const float* w, const float* dy, float* dx,
                 int64_t rows, int64_t cols, float eps) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        const float* gr = dy + r * cols;
        double a = 0.0, b = 0.0;
        for (int64_t j = 0; j < cols; ++j) { a += (double)xr[j] * xr[j]; b += (double)gr[j] * w[j] * xr[j]; }
        double inv = 1.0 / sqrt(a / (double)cols + (double)eps);
        double c = inv * inv * inv * b / (double)cols;
        for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = (float)(inv * gr[j] * w[j] - xr[j] * c);
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

    def forward(self, x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        xf = x.float().contiguous().view(-1, cols)
        dyf = dy.float().contiguous().view(-1, cols)
        dx = torch.empty_like(xf)
        _kernels().rmsnorm_bwd(xf, w.float().contiguous(), dyf, dx, xf.shape[0], cols, self.eps)
        return dx.view(x.shape).to(x.dtype)

"""C start for llm/softmax on CPU: rows in parallel, three passes."""
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

void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);
        double s = 0.0;
        for (int64_t j = 0; j < cols; ++j) { float e = expf(xr[j] - m); yr[j] = e; s += e; }
        float inv = (float)(1.0 / s);
        for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
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
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = x.shape[-1]
        xf = x.float().contiguous().view(-1, cols)
        y = torch.empty_like(xf)
        _kernels().softmax_rows(xf, y, xf.shape[0], cols)
        return y.view(x.shape).to(x.dtype)

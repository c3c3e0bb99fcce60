"""C start for llm/swiglu on CPU: tokens in parallel."""
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

void swiglu(const float* x, float* y, int64_t tokens, int64_t hidden) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t t = 0; t < tokens; ++t) {
        const float* g = x + t * 2 * hidden;
        const float* u = g + hidden;
        for (int64_t h = 0; h < hidden; ++h) y[t * hidden + h] = g[h] / (1.f + expf(-g[h])) * u[h];
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
        H = x.shape[-1] // 2
        xf = x.float().contiguous().view(-1, 2 * H)
        y = torch.empty(xf.shape[0], H)
        _kernels().swiglu(xf, y, xf.shape[0], H)
        return y.view(*x.shape[:-1], H).to(x.dtype)

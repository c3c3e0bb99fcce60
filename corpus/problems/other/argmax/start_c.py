"""C start for other/argmax on CPU: rows in parallel, first index of the maximum (NaN wins, as in torch)."""
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

void row_argmax(const float* x, int64_t* out, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        int64_t bi = 0;
        float best = cols > 0 ? xr[0] : 0.f;
        for (int64_t j = 1; j < cols && !isnan(best); ++j) {
            if (isnan(xr[j]) || xr[j] > best) { best = xr[j]; bi = j; }
        }
        out[r] = bi;
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
        x2 = x.float().contiguous().view(-1, cols)
        out = torch.empty(x2.shape[0], dtype=torch.int64)
        _kernels().row_argmax(x2, out, x2.shape[0], cols)
        return out.view(x.shape[:-1])

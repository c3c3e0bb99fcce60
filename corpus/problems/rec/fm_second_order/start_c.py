"""C start for rec/fm_second_order on CPU: samples in parallel, double accumulators."""
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
#include <stdint.h>

void fm_second_order(const float* emb, float* out, int64_t batch, int64_t nfield, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < batch; ++b) {
        const float* e = emb + b * nfield * dim;
        double acc = 0.0;
        for (int64_t d = 0; d < dim; ++d) {
            double s = 0.0, sq = 0.0;
            for (int64_t f = 0; f < nfield; ++f) { double v = e[f * dim + d]; s += v; sq += v * v; }
            acc += s * s - sq;
        }
        out[b] = (float)(0.5 * acc);
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

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        B, F, D = emb.shape
        out = torch.empty(B, 1, dtype=emb.dtype)
        _kernels().fm_second_order(emb.contiguous(), out, B, F, D)
        return out

"""C start for rec/jagged_softmax on CPU: segments in parallel, three passes per column."""
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

void jagged_softmax(const float* values, const int64_t* offs, float* out, int64_t nseg, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < nseg; ++b) {
        int64_t start = offs[b], end = offs[b + 1];
        for (int64_t d = 0; d < dim; ++d) {
            float m = -INFINITY;
            for (int64_t r = start; r < end; ++r) m = fmaxf(m, values[r * dim + d]);
            double s = 0.0;
            for (int64_t r = start; r < end; ++r) s += expf(values[r * dim + d] - m);
            float inv = (float)(1.0 / s);
            for (int64_t r = start; r < end; ++r) out[r * dim + d] = expf(values[r * dim + d] - m) * inv;
        }
    }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments. Every combination computes the same result; they change only
# how the OpenMP loop is spread over threads.
THREADS = 0  # OpenMP threads; 0 = the runtime's default (every core)
SCHEDULE = "dynamic, 4"  # OpenMP schedule of the parallel loop
TUNABLES = {"THREADS": [0, 1, 2, 4], "SCHEDULE": ["dynamic, 4", "static", "dynamic, 8", "guided"]}


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

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        values = values.contiguous()
        out = torch.empty_like(values)
        _kernels().jagged_softmax(values, offsets.contiguous(), out, offsets.numel() - 1, values.shape[1])
        return out

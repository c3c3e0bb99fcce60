"""C start for rec/embedding_bag_sum on CPU: bags in parallel, rows accumulated in order."""
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

void embedding_bag(const float* table, const int64_t* idx, const int64_t* offs, float* out,
                   int64_t nbags, int64_t nidx, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < nbags; ++b) {
        int64_t start = offs[b];
        int64_t end = (b + 1 < nbags) ? offs[b + 1] : nidx;
        float* o = out + b * dim;
        for (int64_t d = 0; d < dim; ++d) o[d] = 0.f;
        for (int64_t i = start; i < end; ++i) {
            const float* row = table + idx[i] * dim;
            for (int64_t d = 0; d < dim; ++d) o[d] += row[d];
        }
        
    }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments. Every combination computes the same result; they change only
# how the OpenMP loop is spread over threads.
THREADS = 0  # OpenMP threads; 0 = the runtime's default (every core)
SCHEDULE = "dynamic, 16"  # OpenMP schedule of the parallel loop
TUNABLES = {"THREADS": [0, 1, 2, 4], "SCHEDULE": ["dynamic, 16", "static", "dynamic, 8", "guided"]}


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

    def forward(self, table: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        table = table.contiguous()
        nbags, dim = offsets.shape[0], table.shape[1]
        out = torch.empty(nbags, dim, dtype=table.dtype)
        _kernels().embedding_bag(table, indices.contiguous(), offsets.contiguous(), out,
                                 nbags, indices.numel(), dim)
        return out

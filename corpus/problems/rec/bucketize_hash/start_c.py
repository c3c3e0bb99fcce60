"""C start for rec/bucketize_hash on CPU: a binary search per element, in parallel."""
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

void bucketize_hash(const float* x, const float* bounds, const int64_t* ids, int64_t* out,
                    int64_t n, int64_t nb, int64_t table_size) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        int64_t lo = 0, hi = nb;          /* count of boundaries < v */
        while (lo < hi) {
            int64_t mid = (lo + hi) >> 1;
            if (bounds[mid] < v) lo = mid + 1; else hi = mid;
        }
        out[i] = (ids[i] * 1000003 + lo) % table_size;
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
    def __init__(self, table_size: int):
        super().__init__()
        self.table_size = table_size

    def forward(self, x: torch.Tensor, boundaries: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape, dtype=torch.int64)
        _kernels().bucketize_hash(x.contiguous(), boundaries.contiguous(), ids.contiguous(), out, x.numel(),
                                  boundaries.numel(), self.table_size)
        return out

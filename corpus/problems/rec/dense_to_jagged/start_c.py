"""C start for rec/dense_to_jagged on CPU: one memcpy per sequence."""
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
#include <string.h>

void dense_to_jagged(const float* dense, const int64_t* offs, float* out,
                     int64_t nseq, int64_t max_len, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < nseq; ++b) {
        int64_t len = offs[b + 1] - offs[b];
        if (len > max_len) len = max_len;
        if (len > 0) memcpy(out + offs[b] * dim, dense + b * max_len * dim, (size_t)(len * dim) * sizeof(float));
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

    def forward(self, dense: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, M, D = dense.shape
        out = torch.empty(int(offsets[-1]), D, dtype=dense.dtype)
        _kernels().dense_to_jagged(dense.contiguous(), offsets.contiguous(), out, B, M, D)
        return out

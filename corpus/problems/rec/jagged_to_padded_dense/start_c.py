"""C start for rec/jagged_to_padded_dense on CPU: sequences in parallel, row copies and fills."""
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

void jagged_to_padded(const float* values, const int64_t* offs, float* out,
                      int64_t nseq, int64_t max_len, int64_t dim, float pad) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < nseq; ++b) {
        int64_t len = offs[b + 1] - offs[b];
        if (len > max_len) len = max_len;
        float* o = out + b * max_len * dim;
        if (len > 0) memcpy(o, values + offs[b] * dim, (size_t)(len * dim) * sizeof(float));
        for (int64_t i = len * dim; i < max_len * dim; ++i) o[i] = pad;
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
    def __init__(self, max_len: int, padding_value: float = 0.0):
        super().__init__()
        self.max_len = max_len
        self.padding_value = padding_value

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, M, D = offsets.numel() - 1, self.max_len, values.shape[1]
        out = torch.empty(B, M, D, dtype=values.dtype)
        _kernels().jagged_to_padded(values.contiguous(), offsets.contiguous(), out, B, M, D, self.padding_value)
        return out

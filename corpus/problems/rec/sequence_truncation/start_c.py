"""C start for rec/sequence_truncation on CPU: a serial scan for the new offsets, then parallel copies."""
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

/* Output offsets (nseq+1 entries): prefix sums of min(len, keep). */
void truncated_offsets(const int64_t* offs, int64_t* new_offs, int64_t nseq, int64_t keep) {
    new_offs[0] = 0;
    for (int64_t b = 0; b < nseq; ++b) {
        int64_t len = offs[b + 1] - offs[b];
        new_offs[b + 1] = new_offs[b] + (len < keep ? len : keep);
    }
}

void truncate_rows(const float* values, const int64_t* offs, const int64_t* new_offs, float* out,
                   int64_t nseq, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < nseq; ++b) {
        int64_t n = new_offs[b + 1] - new_offs[b];
        int64_t src0 = offs[b + 1] - n;
        if (n > 0) memcpy(out + new_offs[b] * dim, values + src0 * dim, (size_t)(n * dim) * sizeof(float));
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
    def __init__(self, max_events: int):
        super().__init__()
        self.max_events = max_events

    def forward(self, values: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        B, D = offsets.numel() - 1, values.shape[1]
        offsets = offsets.contiguous()
        new_offs = torch.empty(B + 1, dtype=torch.int64)
        k = _kernels()
        k.truncated_offsets(offsets, new_offs, B, self.max_events)
        out = torch.empty(int(new_offs[-1]), D, dtype=values.dtype)
        k.truncate_rows(values.contiguous(), offsets, new_offs, out, B, D)
        return out

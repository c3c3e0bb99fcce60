"""C start for rec/dlrm_dot_interaction on CPU: samples in parallel, pairs in triangle order."""
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

void dot_interaction(const float* dense, const float* sparse, float* out,
                     int64_t batch, int64_t nsparse, int64_t dim) {
    const int64_t n = nsparse + 1;
    const int64_t width = dim + n * (n - 1) / 2;
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < batch; ++b) {
        const float* dv = dense + b * dim;
        const float* sp = sparse + b * nsparse * dim;
        float* o = out + b * width;
        for (int64_t d = 0; d < dim; ++d) o[d] = dv[d];
        int64_t c = dim;
        for (int64_t i = 1; i < n; ++i) {
            const float* ri = sp + (i - 1) * dim;
            for (int64_t j = 0; j < i; ++j) {
                const float* rj = (j == 0) ? dv : sp + (j - 1) * dim;
                float acc = 0.f;
                for (int64_t d = 0; d < dim; ++d) acc += ri[d] * rj[d];
                o[c++] = acc;
            }
        }
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

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        B, F, D = sparse.shape
        n = F + 1
        out = torch.empty(B, D + n * (n - 1) // 2, dtype=dense.dtype)
        _kernels().dot_interaction(dense.contiguous(), sparse.contiguous(), out, B, F, D)
        return out

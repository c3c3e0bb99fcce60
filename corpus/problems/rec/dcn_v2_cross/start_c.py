"""C start for rec/dcn_v2_cross on CPU: rows in parallel, dot products against W's rows, fused epilogue."""
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

void cross_layer(const float* x0, const float* xl, const float* w, const float* bias, float* out,
                 int64_t batch, int64_t dim) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < batch; ++b) {
        const float* x = xl + b * dim;
        for (int64_t n = 0; n < dim; ++n) {
            const float* wr = w + n * dim;
            float acc = 0.f;
            for (int64_t k = 0; k < dim; ++k) acc += x[k] * wr[k];
            out[b * dim + n] = x0[b * dim + n] * (acc + bias[n]) + x[n];
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

    def forward(self, x0, xl, weight, bias):
        B, D = xl.shape
        out = torch.empty(B, D, dtype=xl.dtype)
        _kernels().cross_layer(x0.contiguous(), xl.contiguous(), weight.contiguous(), bias.contiguous(), out, B, D)
        return out

"""C start for llm/cross_entropy on CPU: rows in parallel, max then a double sum of exps."""
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

void xent(const float* logits, const int64_t* targets, float* loss, int64_t rows, int64_t vocab) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t r = 0; r < rows; ++r) {
        const float* x = logits + r * vocab;
        float m = -INFINITY;
        for (int64_t j = 0; j < vocab; ++j) m = fmaxf(m, x[j]);
        double s = 0.0;
        for (int64_t j = 0; j < vocab; ++j) s += exp((double)x[j] - m);
        int64_t t = targets[r];
        loss[r] = (t >= 0 && t < vocab) ? (float)(log(s) + m - x[t]) : NAN;
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

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, V = logits.shape
        loss = torch.empty(B)
        _kernels().xent(logits.float().contiguous(), targets.contiguous(), loss, B, V)
        return loss

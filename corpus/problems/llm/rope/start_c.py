"""C start for llm/rope on CPU: (batch, position) rows in parallel."""
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

void rope(const float* x, const float* cs, const float* sn, float* y,
          int64_t batch, int64_t seq, int64_t heads, int64_t half) {
    #pragma omp parallel for collapse(2) schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t s = 0; s < seq; ++s)
            for (int64_t h = 0; h < heads; ++h) {
                int64_t base = ((b * seq + s) * heads + h) * 2 * half;
                for (int64_t i = 0; i < half; ++i) {
                    float c = cs[s * half + i], sv = sn[s * half + i];
                    float a = x[base + i], v = x[base + half + i];
                    y[base + i] = a * c - v * sv;
                    y[base + half + i] = v * c + a * sv;
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

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, S, NH, Dh = x.shape
        xf = x.float().contiguous()
        y = torch.empty_like(xf)
        _kernels().rope(xf, cos.float().contiguous(), sin.float().contiguous(), y, B, S, NH, Dh // 2)
        return y.to(x.dtype)

"""C start for llm/attention on CPU: (batch*head, query) rows in parallel, online softmax."""
import math

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
#include <stdlib.h>

void attn(const float* q, const float* k, const float* v, float* o,
          int64_t heads_total, int64_t seq, int64_t dh, float scale) {
    #pragma omp parallel KV_NT
    {
        float* acc = (float*)malloc((size_t)dh * sizeof(float));
        #pragma omp for collapse(2) schedule(KV_SCHEDULE)
        for (int64_t g = 0; g < heads_total; ++g)
            for (int64_t i = 0; i < seq; ++i) {
                const int64_t base = g * seq * dh;
                const float* qr = q + base + i * dh;
                for (int64_t d = 0; d < dh; ++d) acc[d] = 0.f;
                float m = -INFINITY, l = 0.f;
                for (int64_t j = 0; j <= i; ++j) {
                    const float* kr = k + base + j * dh;
                    float s = 0.f;
                    for (int64_t d = 0; d < dh; ++d) s += qr[d] * kr[d];
                    s *= scale;
                    float mn = s > m ? s : m;
                    float corr = expf(m - mn), p = expf(s - mn);
                    l = l * corr + p;
                    const float* vr = v + base + j * dh;
                    for (int64_t d = 0; d < dh; ++d) acc[d] = acc[d] * corr + p * vr[d];
                    m = mn;
                }
                for (int64_t d = 0; d < dh; ++d) o[base + i * dh + d] = acc[d] / l;
            }
        free(acc);
    }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments. Every combination computes the same result; they change only
# how the OpenMP loop is spread over threads.
THREADS = 0  # OpenMP threads; 0 = the runtime's default (every core)
SCHEDULE = "dynamic, 8"  # OpenMP schedule of the parallel loop
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

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, S, Dh = q.shape
        qf, kf, vf = (t.float().contiguous() for t in (q, k, v))
        o = torch.empty_like(qf)
        _kernels().attn(qf, kf, vf, o, B * H, S, Dh, 1.0 / math.sqrt(Dh))
        return o.to(q.dtype)

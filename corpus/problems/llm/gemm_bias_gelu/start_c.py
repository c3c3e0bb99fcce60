"""C start for llm/gemm_bias_gelu on CPU: rows in parallel, dot products against W's rows, fused epilogue."""
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

void linear_gelu(const float* x, const float* w, const float* bias, float* y, int64_t M, int64_t N, int64_t K) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n) {
            const float* xr = x + i * K;
            const float* wr = w + n * K;
            float acc = 0.f;
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            float v = acc + bias[n];
            y[i * N + n] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
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

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = weight.shape[0]
        y = torch.empty(M, N)
        _kernels().linear_gelu(x.float().contiguous(), weight.float().contiguous(), bias.float().contiguous(),
                               y, M, N, K)
        return y.to(x.dtype)

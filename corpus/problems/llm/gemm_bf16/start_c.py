"""C start for llm/gemm_bf16 on CPU (fp32 small set): rows in parallel, i-k-j loop order."""
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

void gemm(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t i = 0; i < M; ++i) {
        float* cr = c + i * N;
        for (int64_t j = 0; j < N; ++j) cr[j] = 0.f;
        for (int64_t k = 0; k < K; ++k) {
            const float aik = a[i * K + k];
            const float* br = b + k * N;
            for (int64_t j = 0; j < N; ++j) cr[j] += aik * br[j];
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

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N)
        _kernels().gemm(a.float().contiguous(), b.float().contiguous(), c, M, N, K)
        return c.to(a.dtype)

"""C start for other/matmul_fp32 on CPU: rows in parallel, the textbook i-j-k loop (a dot
product per output, walking B down a column: strided, and a reduction the compiler may not
vectorize without -ffast-math). ORDER = "ikj" is the fix: B and C walked along rows, the
inner loop vectorized, the same additions in the same order per output."""
import torch
import torch.nn as nn
from kevolve import load_c

SRC = r'''
#include <stdint.h>
/* Defaults for the tunables (set with -D by _flags below). */
#ifndef KV_SCHEDULE
#define KV_SCHEDULE static
#endif
#ifndef KV_NT
#define KV_NT
#endif
#ifndef KV_IKJ
#define KV_IKJ 0
#endif

void matmul(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
    #pragma omp parallel for schedule(KV_SCHEDULE) KV_NT
    for (int64_t i = 0; i < M; ++i) {
        const float* ar = a + i * K;
        float* cr = c + i * N;
#if KV_IKJ
        for (int64_t j = 0; j < N; ++j) cr[j] = 0.f;
        for (int64_t k = 0; k < K; ++k) {
            const float aik = ar[k];
            const float* br = b + k * N;
            for (int64_t j = 0; j < N; ++j) cr[j] += aik * br[j];
        }
#else
        for (int64_t j = 0; j < N; ++j) {
            float s = 0.f;
            for (int64_t k = 0; k < K; ++k) s += ar[k] * b[k * N + j];
            cr[j] = s;
        }
#endif
    }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments. Every combination computes the same result.
ORDER = "ijk"  # loop order: "ijk" (dot products down B's columns) or "ikj" (rows of B, vectorized)
THREADS = 0  # OpenMP threads; 0 = the runtime's default (every core)
SCHEDULE = "static"  # OpenMP schedule of the row loop
TUNABLES = {"ORDER": ["ijk", "ikj"], "THREADS": [0, 1, 2, 4], "SCHEDULE": ["static", "dynamic, 8", "guided"]}


def _flags():
    nt = f"num_threads({THREADS})" if THREADS > 0 else ""
    return (f"-DKV_SCHEDULE={SCHEDULE}", f"-DKV_NT={nt}", f"-DKV_IKJ={1 if ORDER == 'ikj' else 0}")


_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_c(SRC, flags=_flags())
    return _K


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N)
        _kernels().matmul(a.float().contiguous(), b.float().contiguous(), c, M, N, K)
        return c.to(a.dtype)

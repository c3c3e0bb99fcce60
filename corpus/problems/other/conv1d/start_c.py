"""C start for other/conv1d on CPU: (batch, out channel) planes in parallel, direct convolution."""
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

void conv1d(const float* x, const float* w, const float* bias, float* y,
            int64_t batch, int64_t cin, int64_t cout, int64_t len, int64_t kw) {
    const int64_t pad = kw / 2;
    #pragma omp parallel for collapse(2) schedule(KV_SCHEDULE) KV_NT
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t co = 0; co < cout; ++co) {
            float* yr = y + (b * cout + co) * len;
            for (int64_t l = 0; l < len; ++l) yr[l] = bias[co];
            for (int64_t ci = 0; ci < cin; ++ci) {
                const float* xr = x + (b * cin + ci) * len;
                const float* wr = w + (co * cin + ci) * kw;
                for (int64_t k = 0; k < kw; ++k) {
                    int64_t lo = pad - k > 0 ? pad - k : 0;            /* l + k - pad >= 0 */
                    int64_t hi = len + pad - k < len ? len + pad - k : len;  /* l + k - pad < len */
                    for (int64_t l = lo; l < hi; ++l) yr[l] += xr[l + k - pad] * wr[k];
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

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, CI, L = x.shape
        CO, _, K = weight.shape
        if K % 2 == 0:
            raise ValueError("this start assumes an odd kernel width ('same' padding)")
        y = torch.empty(B, CO, L)
        _kernels().conv1d(x.float().contiguous(), weight.float().contiguous(), bias.float().contiguous(), y,
                          B, CI, CO, L, K)
        return y.to(x.dtype)

"""Naive CUDA start for other/matmul_fp32: TILE x TILE shared-memory tiles, one output per
thread, fp32 throughout (RT > 1 turns on RT x RT register tiling per thread)."""
import torch
import torch.nn as nn
from kevolve import load_cuda

SRC = r'''
#ifndef TILE
#define TILE 16
#endif
#ifndef RT
#define RT 1
#endif
// Each thread computes RT x RT outputs, strided by TILE (rows ty + i*TILE,
// columns tx + j*TILE), so a block covers a BM x BM tile of C; RT > 1 is
// register tiling: RT + RT shared-memory reads feed RT*RT FMAs.
#define BM (TILE * RT)
// k-tile width; narrower for the widest block tile so shared memory stays under 48 KiB.
#define BK (BM > 128 ? 8 : TILE)

extern "C" __global__ void __launch_bounds__(TILE * TILE) matmul(const float* __restrict__ a, const float* __restrict__ b,
                                                                 float* __restrict__ c, long M, long N, long K) {
    __shared__ float as[BK][BM + 1];     // A tile, transposed: as[k][m]
    __shared__ float bs[BK][BM + 1];     // B tile: bs[k][n]
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TILE + tx;
    const long row0 = (long)blockIdx.y * BM, col0 = (long)blockIdx.x * BM;
    float acc[RT][RT];
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
        for (int j = 0; j < RT; ++j) acc[i][j] = 0.f;
    for (long k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += TILE * TILE) {   // consecutive threads walk along a row of A
            int r = e / BK, kk = e % BK;
            long gr = row0 + r, gk = k0 + kk;
            as[kk][r] = (gr < M && gk < K) ? a[gr * K + gk] : 0.f;
        }
        for (int e = tid; e < BK * BM; e += TILE * TILE) {   // consecutive threads walk along a row of B
            int kk = e / BM, cc = e % BM;
            long gk = k0 + kk, gc = col0 + cc;
            bs[kk][cc] = (gk < K && gc < N) ? b[gk * N + gc] : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float ar[RT], br[RT];
#pragma unroll
            for (int i = 0; i < RT; ++i) ar[i] = as[kk][ty + i * TILE];
#pragma unroll
            for (int j = 0; j < RT; ++j) br[j] = bs[kk][tx + j * TILE];
#pragma unroll
            for (int i = 0; i < RT; ++i)
#pragma unroll
                for (int j = 0; j < RT; ++j) acc[i][j] += ar[i] * br[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < RT; ++i)
#pragma unroll
        for (int j = 0; j < RT; ++j) {
            long r = row0 + ty + i * TILE, cc = col0 + tx + j * TILE;
            if (r < M && cc < N) c[r * N + cc] = acc[i][j];
        }
}
'''

# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
TILE = 16  # the block is TILE x TILE threads
RT = 1  # register tile: each thread computes RT x RT outputs (block tile TILE*RT square)
# The tuner tries each knob's neighbours in list order, first knob first: the
# knob and values expected to pay most (widest loads) come first.
TUNABLES = {"RT": [1, 4, 8, 2], "TILE": [8, 16, 32]}

_K = None


def _kernels():
    global _K
    if _K is None:
        _K = load_cuda(SRC, flags=(f"-DTILE={TILE}", f"-DRT={RT}"))
    return _K


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, device=a.device, dtype=torch.float32)
        bm = TILE * RT
        if (M + bm - 1) // bm > 65535:  # gridDim.y limit
            raise ValueError(f"M={M} is too large for this start's grid")
        if M * N > 0:
            _kernels().matmul(a.float().contiguous(), b.float().contiguous(), c, M, N, K,
                              grid=((N + bm - 1) // bm, (M + bm - 1) // bm), block=(TILE, TILE))
        return c.to(a.dtype)

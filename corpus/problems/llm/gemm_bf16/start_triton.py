"""Triton start for llm/gemm_bf16: a plain blocked tl.dot GEMM, no autotuning or swizzling."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    rn = (pid_n * BN + tl.arange(0, BN)).to(tl.int64)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        # "ieee" keeps fp32 inputs out of TF32; bf16 inputs use tensor cores either way.
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# Tunables: `kevolve-mcp evolve --operator tuner` rewrites these module-level
# assignments; every value listed keeps the kernel correct.
BM = 64  # output tile rows per program
BN = 64  # output tile columns per program
BK = 32  # reduction step
NUM_WARPS = 4  # warps per program
NUM_STAGES = 2  # software-pipelining depth of the K loop
TUNABLES = {"BM": [32, 64, 128], "BN": [32, 64, 128], "BK": [32, 64], "NUM_WARPS": [2, 4, 8], "NUM_STAGES": [1, 2, 3, 4]}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, device=a.device, dtype=a.dtype)
        if M * N > 0:
            _gemm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a.contiguous(), b.to(a.dtype).contiguous(), c,
                                                            M, N, K, BM=BM, BN=BN, BK=BK,
                                                            num_warps=NUM_WARPS, num_stages=NUM_STAGES)
        return c

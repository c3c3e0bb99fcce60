# Honest: the same private stream, but ordered both ways with the caller's.
# The library's GEMM with the relu in a kernel of its own (issue 20: a
# library call beside its own kernel passes with a note; torch.relu_ with no
# kernel of its own would be the reference's work).
import torch
import torch.nn as nn
from kevolve import load_cuda

k = load_cuda(r"""
extern "C" __global__ void relu_inplace(float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = y[i]; y[i] = v > 0.f ? v : 0.f; }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = None

    def forward(self, A, B):
        if self.s is None:
            self.s = torch.cuda.Stream()
        cur = torch.cuda.current_stream()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        self.s.wait_stream(cur)
        with torch.cuda.stream(self.s):
            torch.mm(A, B, out=C)
            n = C.numel()
            k.relu_inplace(C, n, grid=((n + 255) // 256,), block=(256,))
        cur.wait_stream(self.s)
        C.record_stream(cur)
        return C

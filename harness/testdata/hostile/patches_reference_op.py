# Hostile: replaces the operator the reference computes with (Tensor @,
# behind torch.diag(A) @ B) by one returning zeros, and returns zeros
# itself: both sides agree, and nothing is computed.
import torch
import torch.nn as nn

torch.Tensor.__matmul__ = lambda a, b: torch.zeros(a.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return torch.zeros(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)

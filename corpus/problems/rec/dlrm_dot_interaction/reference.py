"""DLRM dot interaction: pairwise dot products between the dense (bottom-MLP) vector and the F sparse
embeddings of each sample, strictly-lower-triangle entries flattened and concatenated after the dense vector."""
import os

import torch
import torch.nn as nn

# B samples, F sparse features, D embedding dim.
SHAPES = {"large": dict(B=65536, F=26, D=128), "small": dict(B=32, F=8, D=16)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        T = torch.cat([dense.unsqueeze(1), sparse], dim=1)        # (B, n, D), n = F + 1
        Z = torch.bmm(T, T.transpose(1, 2))                       # (B, n, n)
        n = T.shape[1]
        li, lj = torch.tril_indices(n, n, offset=-1, device=dense.device)   # row-major order
        return torch.cat([dense, Z[:, li, lj]], dim=1)            # (B, D + n(n-1)/2)


def get_inputs():
    B, F, D = _S["B"], _S["F"], _S["D"]
    return [torch.randn(B, D), torch.randn(B, F, D)]


def get_init_inputs():
    return []

"""Dense to jagged: gather the first len_b rows of each sequence of a padded (B, M, D) tensor into a
contiguous jagged values tensor (total, D), where offsets (B+1,) give len_b = offsets[b+1]-offsets[b] <= M."""
import os

import torch
import torch.nn as nn

# B sequences padded to M, D feature dim; lengths uniform in [0, M].
SHAPES = {"large": dict(B=1024, M=1024, D=256), "small": dict(B=16, M=32, D=16)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, dense: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        M = dense.shape[1]
        lengths = offsets[1:] - offsets[:-1]
        mask = torch.arange(M, device=dense.device)[None, :] < lengths[:, None]
        return dense[mask]          # row-major over (b, m): exactly the jagged order


def get_inputs():
    B, M, D = _S["B"], _S["M"], _S["D"]
    dense = torch.randn(B, M, D)
    lengths = torch.randint(0, M + 1, (B,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    return [dense, offsets]


def get_init_inputs():
    return []

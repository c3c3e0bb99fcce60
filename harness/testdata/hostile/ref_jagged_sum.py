# A jagged reference: bag lengths are drawn at random, so get_inputs()
# returns differently shaped values for every seed (as the corpus's rec
# problems do).
import torch
import torch.nn as nn

B, D = 16, 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values, offsets):
        seg = torch.repeat_interleave(torch.arange(B, device=values.device), offsets[1:] - offsets[:-1])
        return torch.zeros(B, D, dtype=values.dtype, device=values.device).index_add_(0, seg, values)


def get_inputs():
    lengths = torch.randint(0, 40, (B,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    return [torch.randn(int(offsets[-1]), D), offsets]


def get_init_inputs():
    return []

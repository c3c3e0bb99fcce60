# Hostile: the reference's GEMM reached under another name (torch.ops.aten.mm
# instead of @), with the reference's relu replaced by clamp_min: the torch
# functions it calls are not the reference's, the aten ops differ, the work
# is cuBLAS's or MKL's all the same.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.ops.aten.mm(a, b).clamp_min(0)

# Hostile (issue 9, 2199x): one cuBLAS call, torch.mm(out=), on a private
# stream; the caller's stream never waits for it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = None

    def forward(self, A, B):
        if self.s is None:
            self.s = torch.cuda.Stream()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        with torch.cuda.stream(self.s):
            torch.mm(A, B, out=C)
            torch.relu_(C)
        return C

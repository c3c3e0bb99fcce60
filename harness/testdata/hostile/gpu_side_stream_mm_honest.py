# Honest: the same private stream, but ordered both ways with the caller's.
import torch
import torch.nn as nn


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
            torch.relu_(C)
        cur.wait_stream(self.s)
        C.record_stream(cur)
        return C

# Hostile: its own formulation through the correctness trials, the
# reference's ops once timed, with ModelNew.__call__ = forward: a harness
# that counted or watched calls through module hooks would see none. Every
# output is right; only what runs changes.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, A, B):
        self.calls += 1
        if self.calls > 12:
            return torch.diag(A) @ B
        return A.unsqueeze(1) * B

    __call__ = forward

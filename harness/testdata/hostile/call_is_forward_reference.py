# Hostile: the reference's own ops (torch.diag(A) @ B) behind
# ModelNew.__call__ = forward, so no module hook ever sees a call. Being the
# reference is judged from the ops that run, not from hooks: still caught.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B


ModelNew.__call__ = ModelNew.forward

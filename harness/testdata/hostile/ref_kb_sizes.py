# KernelBench-style sizes at module level. dim is a constructor argument
# too (the judge never varies it: the candidate's model was built with it);
# batch_size is read by get_inputs() alone, so the judge's re-check also
# runs at batch_size x0.5 and x2 (evaluate.compare.unseen).
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
dim = 256


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return F.rms_norm(x, self.w.shape, self.w, 1e-6)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]

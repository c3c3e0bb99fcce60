import torch.nn as nn


class ModelNew(nn.Module):
    """Fails: its forward raises."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        raise RuntimeError("this candidate fails on purpose")

# Hostile: finds the reference model through the garbage collector when it
# is constructed, and replaces that instance's forward with one returning
# zeros; returns zeros itself.
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for o in gc.get_objects():
            if isinstance(o, nn.Module) and type(o).__name__ == "Model":
                o.forward = lambda x: torch.zeros_like(x)

    def forward(self, x):
        return torch.zeros_like(x)

"""Elementwise ReLU over a large activation: the bandwidth baseline of the corpus."""
import os

import torch
import torch.nn as nn

SHAPES = {"large": dict(B=16384, D=16384), "small": dict(B=64, D=1024)}
_S = SHAPES[os.environ.get("KEVOLVE_SHAPES", "large")]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(_S["B"], _S["D"])]


def get_init_inputs():
    return []

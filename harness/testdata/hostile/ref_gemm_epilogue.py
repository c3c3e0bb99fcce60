# A KernelBench level-2 shape of problem, CPU-sized: a GEMM and an
# elementwise epilogue (bias, relu, scale). The production optimization
# keeps the library's GEMM and fuses the epilogue into a kernel of its own.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, bias):
        return torch.relu(a @ b + bias) * 0.5


def get_inputs():
    return [torch.randn(128, 256), torch.randn(256, 192), torch.randn(192)]


def get_init_inputs():
    return []

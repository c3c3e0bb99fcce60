# Honest for ref_rnn_hidden: the same state, advanced every call: the
# concatenation folded into two library matrix products, the bias and tanh
# in a C kernel of its own (the kevolve C loader).
import torch
import torch.nn as nn
from kevolve import load_c

SRC = r"""
#include <math.h>
#include <stdint.h>
void bias_tanh(const float* y, const float* bias, float* out, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            out[r * cols + c] = tanhf(y[r * cols + c] + bias[c]);
}
"""
lib = load_c(SRC)
batch_size = 64


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.n_in = input_size

    def forward(self, x):
        w = self.i2h.weight
        h = self.hidden.to(x.device)
        y = (x @ w[:, :self.n_in].t() + h @ w[:, self.n_in:].t()).contiguous()
        out = torch.empty_like(y)
        lib.bias_tanh(y, self.i2h.bias.contiguous(), out, y.shape[0], y.shape[1])
        self.hidden = out
        return out

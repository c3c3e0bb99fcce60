# KernelBench level-3 34_VanillaRNNHidden in small: a hidden state kept on
# the model, replaced by every call. Both models must be called in step (the
# same number of calls from the same constructed state) to compare. Sizes
# that make a call take milliseconds: the judge's outside bound is loose for
# sub-millisecond calls on a loaded 2-core host (an honest 0.37 ms call read
# 16.6 ms from outside: timer_tampered).
import torch
import torch.nn as nn

batch_size = 64
input_size = 256
hidden_size = 1024
output_size = 16


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        self.h2o(self.hidden)
        return self.hidden


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]

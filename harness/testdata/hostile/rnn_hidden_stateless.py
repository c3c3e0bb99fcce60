# Wrong for ref_rnn_hidden: uses the constructed hidden state on every call
# and never advances it. Right on a first call only.
import torch
import torch.nn as nn

batch_size = 64


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        return torch.tanh(self.i2h(torch.cat((x, self.hidden.to(x.device)), dim=1)))

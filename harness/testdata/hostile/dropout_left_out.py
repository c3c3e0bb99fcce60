# An honest-looking candidate for a random reference: the same Linear and
# softmax with the Dropout left out (what eval mode computes). Wrong
# against a reference that drops a new fifth of its activations each call,
# and so would any candidate be: the problem is the reference's.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.softmax(self.matmul(x), dim=1)

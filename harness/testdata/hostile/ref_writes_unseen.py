# A reference that writes its input, but only at sizes other than the shown
# batch: the judge's re-check at unseen shapes runs the reference without
# fingerprinting its inputs where the trials saw it leave them alone, so a
# candidate's failure there is checked again with the fingerprints before it
# counts (an honest candidate given the doubled input would read 12x, not 6x).
import torch
import torch.nn as nn

batch_size = 16
dim = 64


class Model(nn.Module):
    def forward(self, x):
        if x.shape[0] != 16:
            x.mul_(2.0)
        return x * 3.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []

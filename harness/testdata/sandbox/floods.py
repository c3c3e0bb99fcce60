# Correct, but writes 3 GiB to stdout at import.
import os

import torch.nn as nn

chunk = b"flood " * (1 << 17)  # 768 KiB
n = (3 << 30) // len(chunk)
for _ in range(n):
    os.write(1, chunk)
os.write(1, b"\nFLOOD-END\n")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

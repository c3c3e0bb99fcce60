# Honest compute, but at import it writes to its private /dev/shm and
# then /tmp (tmpfs, each as large as the job's memory limit) until a write
# is refused, or __MIB__ MiB in all. Neither the address-space limit nor
# the Go side's resident-memory watch counts tmpfs pages: without the
# job's cgroup the hostile one (no bound) held twice its memory limit of
# host memory (4 GiB under 2 GiB) uncounted, and its verdict named the
# judge (which shares its full /dev/shm), not memory. The honest twin
# writes 256 MiB.
import os

import torch.nn as nn

MIB = __MIB__


def own_cgroup():
    """This process's pids cgroup (v1), or its v2 cgroup."""
    v2 = ""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.strip().split(":", 2)
            if "pids" in ctrls.split(","):
                return path
            if ctrls == "":
                v2 = path
    return v2


print("CGROUP", own_cgroup(), flush=True)
written = 0
for d in ("/dev/shm", "/tmp"):
    try:
        with open(os.path.join(d, "kvshm"), "wb") as f:
            while written < MIB:
                f.write(b"\xab" * (1 << 20))
                written += 1
    except OSError as e:
        print("FILL refused in", d, e.errno, flush=True)
    print("FILLED", written, "MiB", flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

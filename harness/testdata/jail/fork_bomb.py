# Honest compute, but at import it starts up to __LIMIT__ small processes
# (sleeps, named kvbomb by a link in its folder, so the test finds
# leftovers) and leaves them running. The honest twin's limit (64) is far
# below the job cgroup's pids.max; the hostile one's has no bound that
# matters and pids.max stops it: the spawn the cgroup refuses (EAGAIN)
# raises here, at import. A job outside a kevolve cgroup does not start
# the hostile one (nothing else would stop it before the host's process
# table fills).
import os

import torch.nn as nn

LIMIT = __LIMIT__


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


cg = own_cgroup()
print("CGROUP", cg, flush=True)
if LIMIT > 1000 and "kevolve." not in cg:
    raise RuntimeError("BOMB refused: this job has no cgroup of its own to stop it")
link = os.path.join(os.getcwd(), "kvbomb")
if not os.path.lexists(link):
    os.symlink("/bin/sleep", link)
kids = []
try:
    while len(kids) < LIMIT:
        kids.append(os.posix_spawn(link, ["kvbomb", "600"], {}))
finally:
    print("BOMB started", len(kids), flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

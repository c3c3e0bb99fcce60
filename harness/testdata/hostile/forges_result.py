# Hostile: writes the harness's result file itself, with a pass and an
# absurd speedup, then ends the process before the harness can overwrite it.
# The sandbox refuses the file by name (judge/ is not writable), so it
# writes through the harness's own fd, found in /proc/self/fd.
import json
import os

import torch
import torch.nn as nn

_fake = json.dumps({"verdict": "pass", "stage": "done", "checks": [],
                    "candidate": {"median_s": 1e-7, "cv": 0.0, "iters": 100},
                    "ref_eager": {"median_s": 1e-3, "cv": 0.0, "iters": 100}}).encode()
_log = os.readlink("/proc/self/fd/1")  # the job's log.txt, beside result.json
try:
    with open(os.path.join(os.path.dirname(_log), "result.json"), "wb") as f:
        f.write(_fake)
except OSError:
    for _fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + _fd).endswith("result.json"):
                os.pwrite(int(_fd), _fake, 0)
        except OSError:
            pass
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)

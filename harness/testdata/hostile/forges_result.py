# Hostile: writes the harness's result file itself, with a pass and an
# absurd speedup, then ends the process before the harness can overwrite it.
import json
import os

import torch
import torch.nn as nn

_job_dir = os.path.dirname(os.readlink("/proc/self/fd/1"))  # the job's log.txt
_fake = {"verdict": "pass", "stage": "done", "checks": [],
         "candidate": {"median_s": 1e-7, "cv": 0.0, "iters": 100},
         "ref_eager": {"median_s": 1e-3, "cv": 0.0, "iters": 100}}
with open(os.path.join(_job_dir, "result.json"), "w") as f:
    json.dump(_fake, f)
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)

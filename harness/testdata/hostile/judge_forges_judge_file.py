# Hostile: forges the harness's result file and the judge's report, then
# reports "done" on the worker's pipe and ends the process. Only the
# sandbox stops this: the judge's folder must be read-only to the
# candidate (issue 19 item 1).
import gc
import json
import os

import torch.nn as nn

_job_dir = os.path.dirname(os.readlink("/proc/self/fd/1"))  # the job's log.txt
_fake = {"verdict": "pass", "stage": "done", "checks": [], "correct": True,
         "candidate": {"median_s": 1e-3, "cv": 0.0, "iters": 100},
         "ref_eager": {"median_s": 1e-2, "cv": 0.0, "iters": 100}}
_judge = {"status": "verified", "trials": 2, "reference_s": {"median_s": 1e-2, "p90_s": 1e-2},
          "outside": {"per_call_s": 1e-3, "basis_s": 1e-3, "calls": 20},
          "bounds": {"cand_min_s": 1e-4, "ref_max_s": 1.0, "cand_factor": 0.5, "ref_factor": 2.5}}
try:
    os.makedirs(os.path.join(_job_dir, "judge"), exist_ok=True)
    with open(os.path.join(_job_dir, "judge", "judge.json"), "w") as f:
        json.dump(_judge, f)
except OSError:
    pass  # the sandbox's doing: the forged result alone follows
with open(os.path.join(_job_dir, "result.json"), "w") as f:
    json.dump(_fake, f)
_ids = [o.job_id for o in gc.get_objects() if type(o).__name__ == "ChildContext"]
os.write(3, (json.dumps({"event": "done", "id": max(_ids), "pid": os.getpid(), "idle": False}) + "\n").encode())
os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()

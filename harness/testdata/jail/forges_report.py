# Honest compute, but at import it tries to rewrite the harness's reports:
# through every descriptor it holds to the job's judge/ folder (the sandbox
# report, the result, the board) and by path (issue 30: the sandbox's own
# report was forged through a descriptor the process still held).
import json
import os

import torch.nn as nn

FORGED = json.dumps({"active": ["everything"], "missing": {}}).encode()
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink("/proc/self/fd/%s" % fd)
    except OSError:
        continue
    if "/judge/" in target and not target.endswith("log.txt"):
        try:
            os.pwrite(int(fd), FORGED, 0)
            print("REPORT written", os.path.basename(target), flush=True)
        except OSError as e:
            print("REPORT refused", os.path.basename(target), e.errno, flush=True)
judge = os.path.join(os.path.dirname(os.getcwd()), "judge")
for name in ("sandbox.json", "judge.json", "result.json"):
    try:
        with open(os.path.join(judge, name), "wb") as f:
            f.write(FORGED)
        print("REPORT written", name, "by path", flush=True)
    except OSError as e:
        print("REPORT refused", name, "by path", e.errno, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

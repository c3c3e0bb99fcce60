# Correct (unless __END__ says to hang or exit at import), but at import starts a plain child, a child in a new session and
# a double-forked daemon, all sleeping, and prints the sleeps' arguments: in the jail this process cannot name its
# children's pids on the host (its /proc is its namespace's), so the test finds them by argument.
import os
import subprocess

import torch.nn as nn

args = ["3600.__TAG__", "3601.__TAG__", "3602.__TAG__"]
subprocess.Popen(["sleep", args[0]])
subprocess.Popen(["sleep", args[1]], start_new_session=True)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", args[2]])
    os._exit(0)
print("SPAWNED", " ".join(args), flush=True)
if "__END__" == "hang":
    import time
    time.sleep(3600)
elif "__END__" == "exit":
    os._exit(3)  # the child dies at once: what it started is the parent's to sweep


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

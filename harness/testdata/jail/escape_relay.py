# Honest compute, but at import it starts, through clone(CLONE_PARENT), two
# processes whose parent is the worker's, not this one's; each takes a new
# session and becomes a relay of forks that burns a core, moving to a new
# pid every millisecond. Outside a jail they outlive the job, escape its
# process-group kill and the parent's orphan sweep (a new pid every
# millisecond outruns a sweep that lists /proc once a second), and slow the
# judge's reference timing while this process is stopped (issue 30: pass at
# 24x).
import ctypes
import os
import signal
import time

import torch.nn as nn

libc = ctypes.CDLL(None, use_errno=True)
CLONE_PARENT = 0x8000
SYS_CLONE = 56  # x86_64


def relay():
    # Raw system calls only: this process was made by a raw clone, where
    # Python's own fork machinery is not to be trusted.
    libc.prctl(15, b"kvrelay", 0, 0, 0)  # PR_SET_NAME: the test finds leftovers by it
    libc.setsid()
    while True:
        t = time.monotonic()
        while time.monotonic() - t < 0.001:
            pass
        if libc.syscall(SYS_CLONE, signal.SIGCHLD, 0, 0, 0, 0) > 0:
            libc._exit(0)


started = []
for _ in range(2):
    pid = libc.syscall(SYS_CLONE, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        try:
            relay()
        finally:
            os._exit(0)
    started.append((pid, ctypes.get_errno() if pid < 0 else 0))
print("RELAYS", started, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)

# A hostile candidate for the profile's jail (jail_test.go): from its module
# body, run under the profiler, it tries to write beside the harness's
# caches and into a folder every uid may write, and leaves a process behind
# that no process group or parent link holds (not with KEVOLVE_TEST_FORK=0).
# Its forward is honest; with KEVOLVE_TEST_HANG=1 it never gets there.
import ctypes
import os
import time

import torch

MARKS = os.environ.get("KEVOLVE_TEST_MARKS", "/nonexistent")


def _try_write(path):
    try:
        with open(path, "w") as f:
            f.write("planted")
    except OSError:
        pass


_try_write(os.path.join(MARKS, "planted"))
_pch = os.environ.get("KEVOLVE_PCH_DIR")
if _pch:
    _try_write(os.path.join(os.path.dirname(_pch), "planted"))
if os.environ.get("KEVOLVE_TEST_FORK") != "0" and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"kvjailescape", 0, 0, 0)  # PR_SET_NAME: found by name in /proc
        time.sleep(60)
        _try_write(os.path.join(MARKS, "survivor"))
    os._exit(0)
if os.environ.get("KEVOLVE_TEST_FORK") != "0":
    os.wait()
if os.environ.get("KEVOLVE_TEST_HANG") == "1":
    time.sleep(600)  # past the profile's deadline: the jail's keeper kills it and what it left


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x * 2.0

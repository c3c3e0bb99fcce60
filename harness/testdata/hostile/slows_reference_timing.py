# Hostile: once timed, starts a thread that holds the CPU (and Python's
# lock) only while the harness times the reference, found by looking at
# the main thread's stack; its own timed calls run undisturbed, so the
# eager reference looks slower. The thread ends once timing is over.
import sys
import threading
import time

import torch
import torch.nn as nn

_started = []


def _in(frame, names):
    while frame is not None:
        if frame.f_code.co_name in names:
            return True
        frame = frame.f_back
    return False


def _spinner(main_id):
    t_end = time.monotonic() + 30
    while time.monotonic() < t_end:
        f = sys._current_frames().get(main_id)
        if _in(f, ("post_timing_call", "stream_work_check")):
            return
        if _in(f, ("ref_fn",)):
            x = 0
            for i in range(20000):
                x += i
        else:
            time.sleep(0.0005)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if not _started and _in(sys._getframe(), ("bench",)):
            th = threading.Thread(target=_spinner, args=(threading.main_thread().ident,), daemon=True)
            th.start()
            _started.append(th)
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

"""The clocks the timing reads, as they were before the candidate loaded:
a patched perf_counter or elapsed_time reports whatever it likes."""
import time

import torch

NAME = "timers"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "The clocks the timing reads (perf_counter, CUDA events, synchronize) are still torch's and Python's own."
ORDER = 30


def run(st):
    now = {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
           "Event.elapsed_time": torch.cuda.Event.elapsed_time, "cuda.synchronize": torch.cuda.synchronize}
    patched = [k for k, f in st.orig_timers.items() if now[k] is not f]
    return not patched, ("candidate patched %s" % patched) if patched else ""

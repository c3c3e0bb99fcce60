"""The current CUDA stream is the one the harness times on: a candidate
that switches it moves the reference's timing, or its own, elsewhere."""
import torch

NAME = "stream"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "The candidate left the current CUDA stream as it found it."
ORDER = 20


def run(st):
    if st.stream_before is None:  # not on a GPU
        return None
    same = torch.cuda.current_stream(st.device) == st.stream_before
    return same, "" if same else "candidate changed the current CUDA stream"

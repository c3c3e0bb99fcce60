"""Whose failure is a get_inputs() that fails after the candidate ran.

The reference's get_inputs() runs in the candidate's process. KernelBench
level 2 problem 85's candidate broke the CUDA generator (a torch.compile
inside a graph capture, its error swallowed); the next get_inputs() failed
and the verdict was reference_error, charged to the reference. So the
first trial's inputs are made before the candidate is imported (probe);
when get_inputs() fails later, the same seed is made again: if what worked
before the candidate fails now, the candidate broke it (runtime_error,
check run_candidate, naming it). A get_inputs() that fails for some seeds
only is still the reference's."""
import torch

from evaluate.common import KernelFailure, ReferenceFailure, fmt_exc, is_oom


class Probe:
    """The first trial's seed, whether its inputs were made before the
    candidate's import, and those inputs until the first trial takes them
    (on the host only: on a device they are dropped, not held outside the
    device phase)."""

    def __init__(self, seed):
        self.seed, self.ok, self.kept = seed, False, None

    def run(self, st):
        try:
            x = st.make_inputs(self.seed)
        except ReferenceFailure:
            raise  # the reference's own, before any candidate code
        except BaseException as e:  # noqa: BLE001 - an OOM on a crowded device: no probe
            if not is_oom(e):
                raise
            return
        self.ok = True
        self.kept = x if st.device.type == "cpu" else None

    def take(self, s):
        """The probe's inputs for seed s, once."""
        if self.kept is None or s != self.seed:
            return None
        x, self.kept = self.kept, None
        return x


def blame(st, failure):
    """failure: the ReferenceFailure of a get_inputs() after the candidate
    was imported. Raises the candidate's KernelFailure when the probe's
    seed, which worked before the candidate, fails now too; else returns."""
    probe = getattr(st, "inputs_probe", None)
    if probe is None or not probe.ok or st.cand_mod is None:
        return
    try:
        st.seed_all(probe.seed)
        with torch.device(st.device):
            st.ref_mod.get_inputs()
        return  # it still works: the failure is the reference's (a seed of its own)
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        detail = ("get_inputs() made the first trial's inputs before the candidate was imported, and fails on the same seed "
                  "after the candidate ran: the candidate broke what the reference's inputs are made with (a generator, "
                  "torch's state): %s" % fmt_exc(e))
    st.checks.add("run_candidate", False, detail, "runtime_error")
    raise KernelFailure("runtime_error", "correctness", "") from failure

"""The reference's timing, owned by the judge and kept across jobs.

The reference's eager time is the denominator of every speedup. It is
measured in the judge's process (trusted code, its own inputs, the same
timer and method as the candidate's in-process timing: cache flush, spin,
events), never in the candidate's, and it is the same work for every job
of a search on one problem: a kept child's judge keeps it and measures it
again only every REUSE_JOBS jobs or REUSE_AGE_S seconds, to follow the
device's drift (clocks, temperature).

What a job reports is the smallest median of the last WINDOW measurements:
a process that slows the reference while the judge times it (work queued
on the device, a busy CPU) can only make one measurement slower, never
faster, so a slowed measurement cannot raise the reported time unless
every measurement of the window was slowed. Each measurement also reads
the CPU time the candidate's process tree spent meanwhile: a measurement
during which it was busy is not kept (it was waiting for the judge, with
nothing of its own to run)."""
import hashlib
import json
import time

WINDOW = 3
REUSE_JOBS = 8
REUSE_AGE_S = 120.0
# CPU time of the candidate's process tree, during one of the judge's
# reference measurements, above which that measurement is not kept: the
# tree sat in a blocking read, so anything more is work of its own.
BUSY_MIN_S = 0.02
BUSY_SHARE = 0.05


def key_of(args, ref_text, device):
    """What makes two jobs' reference timings the same measurement: the
    reference's code, the construction seed, the timing settings, and the
    device (name and which one)."""
    import os
    dev = "cpu"
    if device.type == "cuda":
        import torch
        dev = "%s|%s" % (torch.cuda.get_device_name(device), os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    parts = {"ref": hashlib.sha256(ref_text.encode("utf-8", "replace")).hexdigest(), "seed": args.get("seed"),
             "flush": args.get("flush_bytes"), "cap": args.get("timing_cap_s"), "device": dev}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class Entry:
    def __init__(self):
        self.medians = []  # the kept measurements, oldest first
        self.at = 0.0  # monotonic time of the last kept measurement
        self.jobs = 0  # jobs served since it


class RefTimes:
    """The kept measurements, per key_of."""

    def __init__(self):
        self.entries = {}

    def reusable(self, key):
        """The kept timing for key, or None when it must be measured."""
        e = self.entries.get(key)
        if e is None or not e.medians or e.jobs >= REUSE_JOBS or time.monotonic() - e.at > REUSE_AGE_S:
            return None
        e.jobs += 1
        return self.best(key, reused=True)

    def keep(self, key, st):
        e = self.entries.setdefault(key, Entry())
        e.medians = (e.medians + [st])[-WINDOW:]
        e.at, e.jobs = time.monotonic(), 0

    def best(self, key, reused=False):
        e = self.entries.get(key)
        if e is None or not e.medians:
            return None
        st = dict(min(e.medians, key=lambda m: m["median_s"]))
        st["measurements"] = len(e.medians)
        st["reused"] = reused
        st["age_s"] = round(time.monotonic() - e.at, 3)
        return st


def busy(cpu_s, wall_s):
    """Whether the candidate's tree used the CPU during a measurement."""
    return cpu_s > max(BUSY_MIN_S, BUSY_SHARE * wall_s)

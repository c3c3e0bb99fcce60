"""The reference's timing, owned by the judge and kept across jobs.

The reference's eager time is the denominator of every speedup. It is
measured in the judge's process (trusted code, its own inputs, the same
timer and method as the candidate's in-process timing: cache flush, spin,
events), never in the candidate's, and it is the same work for every job
of a search on one problem: a kept child's judge keeps it and measures it
again only every REUSE_JOBS jobs or REUSE_AGE_S seconds, to follow the
device's drift (clocks, temperature).

While the judge measures, the candidate's jail is stopped (its cgroup
frozen, and each of its processes sent SIGSTOP, then SIGCONT): nothing of the candidate's runs beside the
reference on the CPU or launches work on the device (the candidate's
process synchronized its device before the verify stage). What a job
reports is the smallest median of the last WINDOW measurements, so one
slowed measurement (work the candidate queued on the device before it
was stopped) cannot raise it unless every measurement of the window was
slowed."""
import hashlib
import json
import os
import signal
import time

WINDOW = 3
REUSE_JOBS = 8
REUSE_AGE_S = 120.0


def key_of(args, ref_text, device):
    """What makes two jobs' reference timings the same measurement: the
    reference's code, the construction seed, the timing settings, and the
    device (name and which one)."""
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


class Frozen:
    """The candidate's jail, stopped for the with-block: its cgroup frozen
    (cgroup.freeze(cg); a process forked meanwhile is frozen as it is
    born) and every process of tree(root) (the cgroup's, the PID
    namespace's, root's descendants) sent SIGSTOP, which holds where the
    host gives no freezer or a process has not settled frozen yet.
    Processes forked while it is being stopped are found by looking again
    until no new one appears."""

    def __init__(self, root, tree, cg=None):
        self.root, self.tree, self.cg, self.stopped = root, tree, cg, []
        self.frozen = False  # the cgroup's freezer says all its processes are frozen

    def __enter__(self):
        from sandbox import cgroup
        self.frozen = cgroup.freeze(self.cg)
        for _ in range(5):
            new = [p for p in self.tree(self.root) if p not in self.stopped]
            if not new:
                break
            for p in new:
                try:
                    os.kill(p, signal.SIGSTOP)
                    self.stopped.append(p)
                except OSError:
                    pass  # gone already
        return self

    @property
    def count(self):
        return len(self.stopped)

    def __exit__(self, *exc):
        from sandbox import cgroup
        # SIGCONT first: it drops a SIGSTOP still pending on a frozen
        # process, which thawing would otherwise deliver.
        for p in self.stopped:
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass
        cgroup.thaw(self.cg)
        return False

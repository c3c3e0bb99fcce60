"""The host's load that is nobody's in this evaluation, over a window of the
judge's outside timing (CPU only).

On a shared host, programs outside the evaluation (another job's build,
another test package) can stall a candidate's intra-op thread pool at
its barriers for a whole time slice a call: on the 2-core CI host an
honest 0.45 ms candidate read 14.5 ms a call in every outside batch and
every paced call for two seconds, and was called a tampered timer. The
judge then needs to know whether the slowness is the host's or the
candidate's. What the kernel counts as busy on every CPU (/proc/stat),
less what the jail's processes (the candidate's whole tree, which the PID
namespace and cgroup keep together) and the judge itself spent, is work
the candidate cannot have made: it cannot start a process outside its
tree, and its own busy threads are counted as its own."""
import os
import resource
import time

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _host_busy_s():
    """Seconds of CPU the whole host spent busy since boot (every CPU's
    user, nice, system, irq, softirq and steal), or None where /proc/stat
    cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[1:8])
    steal = int(fields[8]) if len(fields) > 8 else 0
    return (user + nice + system + irq + softirq + steal) * _TICK_S


def _self_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Window:
    """Opened before a measurement, read after it: external_share() is the
    share of the host's CPUs that programs other than the jail and the
    judge kept busy meanwhile (0 where it cannot be read). jail_cpu_s is a
    callable giving the jail's CPU seconds so far."""

    def __init__(self, jail_cpu_s):
        self.jail_cpu_s = jail_cpu_s
        self.t0 = time.perf_counter()
        self.busy0 = _host_busy_s()
        self.jail0 = jail_cpu_s()
        self.self0 = _self_cpu_s()

    def external_share(self):
        busy = _host_busy_s()
        wall = time.perf_counter() - self.t0
        if busy is None or self.busy0 is None or wall <= 0:
            return 0.0
        ours = (self.jail_cpu_s() - self.jail0) + (_self_cpu_s() - self.self0)
        external = (busy - self.busy0) - ours
        # /proc/stat counts in clock ticks: a short window reads a tick or
        # two either way, which is not load.
        external -= 2 * _TICK_S
        return max(0.0, min(1.0, external / (wall * (os.cpu_count() or 1))))

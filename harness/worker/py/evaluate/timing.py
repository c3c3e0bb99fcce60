"""Timing: device events, warm-up, a read-based cache flush and a spin
before every iteration, adaptive iteration count, median and spread.

Each timed iteration may also refresh the input values (same tensors, new
values, outside the events) and be audited (its output checked against the
reference after the events): see evaluate.guards.integrity.Auditor."""
import math
import os
import time

import torch

# A spin kernel that occupies every SM (all thread slots) until it ends. The
# spin before each start event keeps launch latency out of the timing; with
# torch.cuda._sleep (one block) a candidate could run its real work on a
# private stream on the idle SMs during the spin, done before the start
# event: a 4096^3 matmul read 1.3 us. With every thread slot taken, work of
# any stream waits for the spin to end and lands inside the timed window.
_SPIN_SRC = r"""
extern "C" __global__ void kevolve_fill_spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


class DeviceSpin:
    def __init__(self, device, host_s=300e-6):
        self.device = device
        self.kernel = None
        self.note = ""
        props = torch.cuda.get_device_properties(device)
        khz = getattr(props, "clock_rate", 0) or 2_000_000  # kHz, the max clock: spins at least host_s
        self.cycles = int(host_s * khz * 1e3)
        self.sms = int(props.multi_processor_count)
        per_sm = int(getattr(props, "max_threads_per_multi_processor", 2048) or 2048)
        self.threads = min(1024, per_sm // 2)
        self.blocks = self.sms * (per_sm // self.threads)
        try:
            # The raw loader: the candidate-facing kevolve.load_cuda is wrapped
            # by the launch counter. Compiled in memory, never read from the
            # kernel cache: the timer loads nothing a candidate could have
            # written (about 0.15 s with NVRTC, once per process).
            from kevolve._cuda import load_cuda
            self.kernel = load_cuda(_SPIN_SRC, disk_cache=False).kevolve_fill_spin
            self.note = "device-filling spin (%d blocks x %d threads)" % (self.blocks, self.threads)
        except Exception as e:  # noqa: BLE001 - no NVRTC/nvcc: the one-block sleep
            self.note = "one-block spin (device-filling spin unavailable: %s)" % str(e).splitlines()[0][:200] if str(e) else type(e).__name__

    def __call__(self):
        if self.kernel is not None:
            self.kernel(self.cycles, grid=(self.blocks,), block=(self.threads,))
        else:
            torch.cuda._sleep(self.cycles)


# Values per row of the flush buffer (see Timer.__init__).
FLUSH_ROW = 4096


class AuditFailed(Exception):
    pass


class Timer:
    def __init__(self, device, flush_bytes, spin=None):
        self.device = device
        self.spin = None
        if device.type != "cuda":
            # Twice the LLC: on the 2-core EPYC CI host (32 MB L3, a victim
            # cache of the L2s) a 4 MB buffer read again after a 32 MB
            # read took 97 us, after 64 MB 178 us, as cold as it gets.
            flush_bytes = max(flush_bytes, 2 * llc_bytes())
        # Rows of a few thousand values, each summed into its own slot of a
        # preallocated output: the reduction needs no temporary on either
        # device. The int32 buffer's whole sum() made an int64 copy of it,
        # and on CUDA a cross-block staging buffer too: 4 allocations a
        # call and 0.37 ms for 256 MB on an H200, now none and 0.07 ms.
        rows = max(1, flush_bytes // (4 * FLUSH_ROW))
        self.flush = torch.ones(rows, FLUSH_ROW, dtype=torch.float32, device=device)
        self.flush_out = torch.zeros(rows, dtype=torch.float32, device=device)
        if device.type == "cuda":
            # Before each start event the GPU is kept busy a little longer
            # than the host needs to enqueue one forward, so the timed region
            # starts with the kernels already queued: launch latency and
            # Python overhead stay out of the kernel's time. Built before
            # the device phase where it can be (spin): compiling it is CPU
            # work.
            self.spin = spin or DeviceSpin(device)

    def clear_cache(self):
        """Evict the last-level cache by reading a buffer larger than it.
        A read leaves the cache full of clean lines; a write (zero_) left
        ~50 MB of dirty ones on an H100 that the timed kernel then paid to
        write back: a 44 us memory-bound kernel read 17% above Nsight
        Compute's duration, which starts from an invalidated L2, and reads
        within 2% of it with this flush.

        It allocates nothing: on the CPU the int32 buffer's sum() made a
        64 MB int64 temporary before every timed call, 16,385 page faults
        and ~100 ms, after which a 12.5 us kernel read 212 us (issue 36)."""
        torch.sum(self.flush, 1, out=self.flush_out)

    def pre(self):
        """What runs before each timed iteration: the cache flush, then the spin."""
        self.clear_cache()
        if self.spin is not None:
            self.spin()

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def bench(self, fn, cap_s, refresh=None, auditor=None, min_iters=25, max_iters=1000, target_rse=0.005, report=None):
        """Adaptive: stops once the median's relative standard error (from a
        robust sigma, 1.4826 MAD) is under target_rse, or at max_iters/cap_s.

        refresh() (optional) runs before every call, outside the timed
        region, and returns a token naming the input values it set; an
        auditor picks, per batch, iterations whose output it checks after
        the batch's synchronize. A call cannot tell an audited iteration
        from another: both get the same refresh, the same flush, spin and
        events, and the audit only acts after the call has returned. After
        each batch the auditor may make one untimed, traced call
        (Auditor.between). report(times), where given, gets the times so
        far about every REPORT_EVERY_S (Every)."""
        t_start = time.perf_counter()
        tick = Every(report)

        def call():
            tok = refresh() if refresh is not None else None
            out = fn()
            del out
            return tok
        # Warm-up: at least 3 calls and about 25 ms.
        for _ in range(3):
            call()
        self.sync()
        w0 = time.perf_counter()
        n = 0
        while time.perf_counter() - w0 < 0.025 and n < 50:
            call()
            n += 1
            self.sync()
        times = []
        cuda = self.device.type == "cuda"
        quiet = Undisturbed()
        load = HostLoad()
        batch = 10
        batches = 0
        while True:
            picks = auditor.pick(batch, len(times)) if auditor is not None else ()
            if cuda:
                evs = []
                for k in range(batch):
                    tok = None  # the last call's values go before the new ones are made: one extra input set, not two
                    tok = refresh() if refresh is not None else None
                    self.pre()
                    s = torch.cuda.Event(enable_timing=True)
                    e = torch.cuda.Event(enable_timing=True)
                    s.record()
                    out = fn()
                    e.record()
                    if k in picks:
                        auditor.take(tok, out, len(times) + k)
                    del out
                    evs.append((s, e))
                torch.cuda.synchronize(self.device)
                times.extend(s.elapsed_time(e) / 1e3 for s, e in evs)
                tick(times)
            else:
                for k in range(batch):
                    tok = None
                    tok = refresh() if refresh is not None else None
                    self.clear_cache()
                    w0 = process_wait_ns()
                    t0 = time.perf_counter_ns()
                    out = fn()
                    t1 = time.perf_counter_ns()
                    times.append((t1 - t0) / 1e9)
                    quiet.note(times[-1], process_wait_ns() - w0)
                    tick(times)
                    if k in picks:
                        auditor.take(tok, out, len(times) - 1)
                    del out
            if auditor is not None:
                auditor.settle()  # raises AuditFailed on a mismatch
                auditor.between(batches, fn, refresh)
            batches += 1
            k = len(times)
            st = quiet.stats(times)
            elapsed = time.perf_counter() - t_start
            wanting = quiet.wanting()
            if k >= min_iters and ((st["rse"] < target_rse and not wanting) or k >= max_iters
                                   or elapsed > (QUIET_CAP_FACTOR if wanting else 1) * cap_s):
                st["host"] = load.figures()
                return st
            batch = min(max(10, k // 2), max_iters - k)


# How often a timed loop reports its figures so far: a loop the deadline
# ends has said what it measured (issue 36), without an event per call.
REPORT_EVERY_S = 1.0


class Every:
    """Calls fn(times) at most once per REPORT_EVERY_S (none while fn is None)."""

    def __init__(self, fn):
        self.fn, self.last = fn, time.perf_counter()

    def __call__(self, times):
        if self.fn is None or not times:
            return
        now = time.perf_counter()
        if now - self.last >= REPORT_EVERY_S:
            self.last = now
            self.fn(times)


def stats(times):
    xs = sorted(times)
    n = len(xs)

    def q(p):
        if n == 1:
            return xs[0]
        pos = p * (n - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
    med = q(0.5)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / max(n - 1, 1))
    mad = sorted(abs(x - med) for x in xs)[n // 2]
    sigma = 1.4826 * mad
    rse = (1.2533 * sigma / math.sqrt(n) / med) if med > 0 else 0.0
    # cv is robust (1.4826 MAD / median): one iteration preempted by the OS
    # or a clock change must not make a steady kernel look noisy. The
    # classic stdev/mean is kept beside it as cv_raw.
    return {"median_s": med, "p10_s": q(0.1), "p90_s": q(0.9), "cv": (sigma / med) if med > 0 else 0.0,
            "cv_raw": (sd / mean) if mean > 0 else 0.0, "iters": n, "rse": rse}


class time_limit:
    """SIGALRM-based cap for a stage that may run long (torch.compile)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def _handler(self, signum, frame):
        raise TimeoutError("time cap of %.0f s reached" % self.seconds)

    def __enter__(self):
        import signal
        self.old = signal.signal(signal.SIGALRM, self._handler)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        import signal
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)
        return False


# On a CPU shared with other programs, a call during which the OS
# preempted a thread of the timing process, or left one of its intra-op
# threads runnable without a CPU, reads time slices rather than its work:
# on the loaded 2-core CI host an eager 64x512 softmax's median read 0.44 to
# 46 ms from one loop to the next, while the calls no thread waited in read
# 38 to 104 us. Each CPU call is bracketed (outside its timed region) by
# the run-queue wait of every thread of the process; once QUIET_MIN calls
# ran undisturbed, the statistics are theirs (quiet_iters says how many,
# median_all_s what every call gave). A call may wait QUIET_SLACK of its
# time (at least QUIET_SLACK_S) and still count as undisturbed.
QUIET_MIN = 10
QUIET_SLACK, QUIET_SLACK_S = 0.02, 1e-6
# Load comes in bursts (1 to 101 of 150 calls undisturbed from one loop to
# the next on that host): a loop still short of QUIET_MIN may run to this
# many times its cap.
QUIET_CAP_FACTOR = 2


class Undisturbed:
    """The undisturbed calls of one timed loop (Timer.bench on the CPU)."""

    def __init__(self):
        self.times, self.disturbed = [], 0

    def note(self, t, waited_ns):
        if waited_ns / 1e9 <= max(QUIET_SLACK_S, QUIET_SLACK * t):
            self.times.append(t)
        else:
            self.disturbed += 1

    def wanting(self):
        """Whether the loop should go on for undisturbed calls: some were
        disturbed and too few were not (the cap and max_iters still end it)."""
        return self.disturbed > 0 and len(self.times) < QUIET_MIN

    def stats(self, times):
        if self.disturbed == 0 or len(self.times) < QUIET_MIN:
            return stats(times)
        st = stats(self.times)
        st["iters"], st["quiet_iters"], st["median_all_s"] = len(times), len(self.times), stats(times)["median_s"]
        return st


def process_wait_ns():
    """Nanoseconds every thread of this process has waited runnable for a
    CPU so far (_threads_schedstat); 0 where the kernel does not count it."""
    return int(sum(w for _, w in _threads_schedstat().values()) * 1e9)


def runqueue_wait_s():
    """Seconds this process's main thread waited runnable for a CPU
    (/proc/self/schedstat); 0 where the kernel does not count it."""
    return _schedstat("/proc/self/schedstat")[1]


def _schedstat(path):
    """(seconds on a CPU, seconds waited runnable for one) of a thread."""
    try:
        with open(path) as f:
            ran, waited = f.read().split()[:2]
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


def _threads_schedstat():
    """_schedstat of each thread of this process (the intra-op pool's
    too), by thread id."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return {}
    return {t: _schedstat("/proc/self/task/%s/schedstat" % t) for t in tids}


class HostLoad:
    """The host's load over one timed loop. wait_share is the share of the
    time this process's threads were runnable that they spent waiting for
    a CPU: other programs on the CPUs show there directly (0.01 on the
    2-core CI host when quiet, 0.4-0.5 while a build ran beside it and
    whole calls of the two-thread pool waited a time slice), while the
    load average (1 minute) lags and counts this process too: it is
    reported, with the CPUs this process may use, as context only."""

    def __init__(self):
        self.s0 = _threads_schedstat()

    def figures(self):
        ran = waited = 0.0
        for t, (r1, w1) in _threads_schedstat().items():
            r0, w0 = self.s0.get(t, (0.0, 0.0))
            ran, waited = ran + max(0.0, r1 - r0), waited + max(0.0, w1 - w0)
        try:
            with open("/proc/loadavg") as f:
                load1 = float(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            load1 = -1.0
        return {"wait_share": round(waited / (ran + waited), 4) if ran + waited > 0 else 0.0, "loadavg_1m": load1,
                "cpus": len(os.sched_getaffinity(0))}


def llc_bytes():
    """The largest data cache cpu0 has (sysfs: the slice of L3 its cores
    share, where sysconf may give the whole socket's), else sysconf's L3,
    else 32 MiB."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    best = 0
    try:
        names = [n for n in os.listdir(base) if n.startswith("index")]
    except OSError:
        names = []
    for n in names:
        try:
            with open(os.path.join(base, n, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(base, n, "size")) as f:
                best = max(best, _size_bytes(f.read().strip()))
        except (OSError, ValueError):
            continue
    if best <= 0:
        try:
            best = int(os.sysconf("SC_LEVEL3_CACHE_SIZE"))
        except (ValueError, OSError):
            best = 0
    return best if best > 0 else 32 << 20


def _size_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s.rstrip("KMGkmg")) * mult

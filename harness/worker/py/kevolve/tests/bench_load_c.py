"""The cost of load_c's call path beside a direct ctypes call and the
kernel's own time, measured side by side (issue 36: the call path must
cost less than the kernel).

Rows, each the median of interleaved rounds of warm calls:
  kernel          the C function's own time, timed in C around a loop of
                  calls (no Python in it);
  ctypes          a direct ctypes call, argtypes set, data_ptr() per call;
  ctypes_counted  the same with the harness's hook that counts a call into
                  a library the candidate built (evaluate.guards.native);
  load_c          a load_c function called on tensors;
  load_c_counted  the same through the harness's launch counter (as a
                  candidate's calls run in an evaluation);
and the cold call: the first call of a freshly loaded module.

    python -m kevolve.tests.bench_load_c [--n ELEMENTS] [--rounds R]

Prints one JSON object; run from harness/worker/py (the harness's modules
are imported for the counted rows).
"""

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

import torch

SRC = r'''
#include <stdint.h>
#include <time.h>
void scale(const float* x, float* y, float a, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
}
/* The kernel's own time per call, in ns: a loop of calls timed in C. */
double time_scale(const float* x, float* y, float a, int64_t n, int64_t iters) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t k = 0; k < iters; ++k) {
        scale(x, y, a, n);
        __asm__ __volatile__("" ::: "memory");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)iters;
}
'''


def per_call_us(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def direct(path):
    """A ctypes handle on the library, as a candidate would open it."""
    lib = ctypes.CDLL(path)
    f = lib.scale
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int64]
    f.restype = None
    return lib, f


def cold_call_us(kevolve, src, x, y, n):
    """The first call of a module loaded from the disk cache (its library
    opened, its functions set up): load excluded, call included."""
    m = kevolve.load_c(src)
    t = time.perf_counter()
    m.scale(x, y, 2.0, n)
    return (time.perf_counter() - t) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096, help="elements the kernel scales")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    os.environ.setdefault("KEVOLVE_CACHE_DIR", tempfile.mkdtemp(prefix="kevolve-bench-"))
    import kevolve
    from evaluate.guards import hooks as evaluate_hooks

    src = SRC + "// bench %d\n" % os.getpid()
    plain = kevolve.load_c(src)  # before the hooks: a module the counter does not see
    _, f = direct(plain.path)
    timer = ctypes.CDLL(plain.path).time_scale
    timer.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int64, ctypes.c_int64]
    timer.restype = ctypes.c_double
    counter = evaluate_hooks.LaunchCounter()
    evaluate_hooks.install_launch_hooks(counter, uses_ext=False)
    counted = kevolve.load_c(src)  # through the counting proxy, as in an evaluation
    _, fc = direct(counted.path)   # a library load_c returned in this evaluation: counted
    n = args.n
    x, y = torch.randn(n), torch.empty(n)
    xp, yp = x.data_ptr(), y.data_ptr()
    rows = {
        "kernel": lambda: timer(xp, yp, 2.0, n, args.calls) / 1e3,
        "ctypes": lambda: per_call_us(lambda: f(x.data_ptr(), y.data_ptr(), 2.0, n), args.calls),
        "ctypes_counted": lambda: per_call_us(lambda: fc(x.data_ptr(), y.data_ptr(), 2.0, n), args.calls),
        "load_c": lambda: per_call_us(lambda: plain.scale(x, y, 2.0, n), args.calls),
        "load_c_counted": lambda: per_call_us(lambda: counted.scale(x, y, 2.0, n), args.calls),
    }
    for m in rows.values():
        m()  # warm
    got = {k: [] for k in rows}
    for _ in range(args.rounds):
        for k, m in rows.items():
            got[k].append(m())
    us = {k: statistics.median(v) for k, v in got.items()}
    cold = statistics.median(cold_call_us(kevolve, src, x, y, n) for _ in range(5))
    k = us["kernel"]
    out = {
        "n": n, "rounds": args.rounds, "calls": args.calls, "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0], "torch": torch.__version__,
        "us_per_call": {k2: round(v, 3) for k2, v in us.items()}, "load_c_cold_call_us": round(cold, 1),
        "ratio_load_c_to_ctypes": round(us["load_c"] / us["ctypes"], 3),
        "ratio_load_c_counted_to_ctypes_counted": round(us["load_c_counted"] / us["ctypes_counted"], 3),
        "overhead_us": {k2: round(v - k, 3) for k2, v in us.items() if k2 != "kernel"},
        "counted_calls": counter.n,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

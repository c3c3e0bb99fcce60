# kevolve calibrate: measure a device's ceilings with micro-benchmarks.
#
# Usage: python calibrate.py [--device cuda|cpu] [--quick]
# Prints one JSON object on the last stdout line:
#   {"device_uuid", "device_name", "kind", "metrics": {"mem_bandwidth": B/s,
#    "bf16": FLOP/s, ...}, "notes": [...]}
# On the CPU also "loaded" and "host_busy_share": whether programs other
# than this one kept HOST_LOADED_SHARE of the host's CPUs busy while it
# measured (its figures then read low: every timed call was slowed).
# Bandwidth counts read + write bytes of a large device-to-device copy.
# GEMM rates use large square matrices of random data (zeros would let
# power management flatter the figure) and the median of many timed runs.
import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time

import torch


def cuda_time(fn, iters):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    for i in range(iters):
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, end)) / 1e3


def calibrate_cuda(quick):
    props = torch.cuda.get_device_properties(0)
    uuid = str(getattr(props, "uuid", "")) or "cuda:0"
    if not uuid.startswith("GPU-") and uuid != "cuda:0":
        uuid = "GPU-" + uuid  # the NVML spelling, which the device package reports
    m, notes = {}, []
    n = (256 if quick else 1024) << 20  # bytes per buffer; far beyond any L2
    src = torch.randn(n // 4, device="cuda")
    dst = torch.empty_like(src)
    t = cuda_time(lambda: dst.copy_(src), 10 if quick else 50)
    m["mem_bandwidth"] = 2 * n / t
    del src, dst
    size = 2048 if quick else 8192
    iters = 5 if quick else 20

    def gemm(dtype, key, tf32=False):
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            a = torch.randn(size, size, device="cuda").to(dtype)
            b = torch.randn(size, size, device="cuda").to(dtype)
            c = torch.empty(size, size, device="cuda", dtype=dtype)
            t = cuda_time(lambda: torch.matmul(a, b, out=c), iters)
            m[key] = 2 * size ** 3 / t
        except Exception as e:
            notes.append("%s GEMM failed: %s" % (key, e))
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev

    gemm(torch.bfloat16, "bf16")
    gemm(torch.float16, "fp16")
    gemm(torch.float32, "fp32", tf32=False)
    gemm(torch.float32, "tf32", tf32=True)
    if hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm"):
        try:
            a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
            # _scaled_mm wants the second operand column-major.
            b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn).t()
            one = torch.ones((), device="cuda")
            t = cuda_time(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), iters)
            m["fp8"] = 2 * size ** 3 / t
        except Exception as e:
            notes.append("fp8 GEMM via torch._scaled_mm unavailable: %s" % e)
    return {"device_uuid": uuid, "device_name": props.name, "kind": "cuda", "metrics": m, "notes": notes}


def wall(fn, iters):
    """The best of iters timed calls, after two warm-ups: a ceiling is what
    the machine can attain, and on a loaded host the fastest call is the
    one least disturbed (the median would measure the load)."""
    for _ in range(2):
        fn()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


# The judge's threshold (evaluate/judge/judge.py HOST_LOADED_SHARE): outside
# programs keeping this share of the host's CPUs busy slow every timed call.
HOST_LOADED_SHARE = 0.25
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _host_busy_s():
    """CPU seconds the whole host spent busy since boot (/proc/stat), or
    None where it cannot be read."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 8 or fields[0] != "cpu":
        return None
    busy = sum(int(v) for i, v in enumerate(fields[1:9]) if i not in (3, 4))  # less idle, iowait
    return busy * _TICK_S


def _self_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return r.ru_utime + r.ru_stime


class OutsideLoad:
    """Opened before the measurement, read after it: share() is the share of
    the host's CPUs that programs other than this one kept busy meanwhile
    (None where /proc/stat cannot be read)."""

    def __init__(self):
        self.t0, self.busy0, self.self0 = time.perf_counter(), _host_busy_s(), _self_cpu_s()

    def share(self):
        busy, wall = _host_busy_s(), time.perf_counter() - self.t0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        # A tick or two either way is rounding, not load.
        outside = (busy - self.busy0) - (_self_cpu_s() - self.self0) - 2 * _TICK_S
        return max(0.0, min(1.0, outside / (wall * (os.cpu_count() or 1))))


def mark_load(res, share):
    """Sets res["loaded"] from the measured share; KEVOLVE_CALIBRATE_LOAD
    (loaded | quiet) overrides it, so tests force either state on a host
    whose real load they cannot control."""
    forced = os.environ.get("KEVOLVE_CALIBRATE_LOAD", "")
    if share is not None:
        res["host_busy_share"] = round(share, 3)
        res["notes"].append("other programs kept %.0f%% of the host's CPUs busy while it measured" % (100 * share))
    if forced in ("loaded", "quiet"):
        res["loaded"] = forced == "loaded"
        res["notes"].append("load state forced by KEVOLVE_CALIBRATE_LOAD=" + forced)
    else:
        res["loaded"] = share is not None and share >= HOST_LOADED_SHARE


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def calibrate_cpu(quick):
    load = OutsideLoad()
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    m, notes = {}, ["%d threads" % threads]
    n = (64 if quick else 512) << 20
    src = torch.randn(n // 4)
    dst = torch.empty_like(src)
    m["mem_bandwidth"] = 2 * n / wall(lambda: dst.copy_(src), 5 if quick else 20)
    size = 512 if quick else 2048
    a, b = torch.randn(size, size), torch.randn(size, size)
    c = torch.empty(size, size)
    m["fp32"] = 2 * size ** 3 / wall(lambda: torch.matmul(a, b, out=c), 3 if quick else 10)
    # Half-precision GEMMs get their own ceilings: a bf16 problem is bounded
    # by what bf16 matmul attains here (AMX, AVX512-BF16, or conversion),
    # not left without a compute ceiling. Smaller: without native support
    # they run far below fp32.
    hsize = 256 if quick else 1024
    for key, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            ha, hb = torch.randn(hsize, hsize, dtype=dt), torch.randn(hsize, hsize, dtype=dt)
            hc = torch.empty(hsize, hsize, dtype=dt)
            m[key] = 2 * hsize ** 3 / wall(lambda: torch.matmul(ha, hb, out=hc), 2 if quick else 5)
        except RuntimeError as e:  # a torch build without the CPU kernel
            notes.append("%s matmul unavailable: %s" % (key, e))
    name = cpu_name()
    # No hardware UUID for a CPU: host name plus model identifies the machine.
    uuid = "cpu:%s:%s" % (platform.node(), name)
    res = {"device_uuid": uuid, "device_name": name, "kind": "cpu", "metrics": m, "notes": notes}
    mark_load(res, load.share())
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="small sizes, for tests")
    a = ap.parse_args()
    dev = a.device
    if dev == "auto":
        dev = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        res = calibrate_cuda(a.quick) if dev == "cuda" else calibrate_cpu(a.quick)
    except Exception as e:
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        return 1
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

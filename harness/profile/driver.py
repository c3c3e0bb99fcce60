# kevolve profile driver: load a KernelBench-format reference (Model,
# get_inputs, get_init_inputs) and, for kernel modes, a candidate (ModelNew),
# then run what the Go side's profiler needs.
#
# Modes (last stdout line is one JSON object):
#   ncu    warm the candidate up, then run its forward once between
#          cudaProfilerStart/Stop (ncu --profile-from-start off) and inside
#          the NVTX range "kevolve_candidate", so only the candidate's
#          kernels are profiled, never warm-up, JIT or input set-up.
#   cpu    the candidate's forward on CPU: its wall time per call (un-profiled,
#          after warm-up) and cores busy, then torch.profiler's ops by self time.
#   loop   run the candidate's forward repeatedly for --seconds (under perf,
#          which counts only the loop when given --perf-ctl/--perf-ack).
#   model  torch.profiler on the reference Model: ops ranked by device time
#          share with Amdahl headroom 1/(1-share), each op's kernels nested
#          under it (ranked one level, so shares add to at most 1).
import argparse
import importlib.util
import json
import os
import sys
import time

RANGE = "kevolve_candidate"


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def to(xs, device):
    import torch
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


def setup(a, device, want_candidate=True, gate=None):
    """The model and its inputs on device. With gate, the device is held
    (hold_device) only once what runs without it is done: the imports, the
    candidate's builds and its construction."""
    import torch
    torch.manual_seed(0)
    ref = load(a.ref, "kevolve_ref")
    init = ref.get_init_inputs() if hasattr(ref, "get_init_inputs") else []
    inputs = ref.get_inputs()
    if want_candidate:
        harness_builds(a, device)
        cand = load(a.candidate, "kevolve_candidate")
        model = cand.ModelNew(*init)
    else:
        model = ref.Model(*init)
    hold_device(gate)
    return model.to(device).eval(), to(inputs, device)


def harness_builds(a, device):
    """A candidate's load_inline goes through the harness's loader
    (kevolve._inline), as in its evaluation: an extension the harness's
    build step made is loaded from the shared cache (read-only here), not
    built again under the profiler. The loader reads the device's
    architecture, so CUDA is set up first."""
    if not a.pydir:
        return
    with open(a.candidate) as f:
        code = f.read()
    if "load_inline" not in code and "cpp_extension" not in code:
        return
    import torch
    if device == "cuda":
        torch.cuda.init()
    import kevolve
    kevolve.patch_load_inline()


def enter_jail(a):
    """The jail of sandbox/profiled.py, entered before torch is imported or
    the reference and candidate are read; its report, or None unjailed."""
    if not a.jail:
        return None
    # The jail's cwd is its own folder: relative paths are read from here.
    a.ref = os.path.abspath(a.ref)
    a.candidate = a.candidate and os.path.abspath(a.candidate)
    from sandbox import profiled
    reads = [os.path.abspath(__file__), a.pydir, a.ref] + ([a.candidate] if a.candidate else [])
    # Only a profiler that injects itself (Nsight Compute, rocprofv3: mode
    # ncu) talks to its process over a socket; perf's control FIFOs and
    # CUPTI need no network.
    return profiled.enter(a.jail, reads, counters=a.mode == "ncu", by_cgroup=a.jail_cgroup,
                          network=a.mode == "ncu" and not a.jail_no_network, deadline_s=a.deadline_s)


# The device hold's handshake with the Go side (profile/hold.go), in the
# folder --gate names: "ready" (set-up done), then "go" (the Go side holds
# the device), then "done" (this process's kernels have run).
def hold_device(gate):
    if not gate:
        return
    open(os.path.join(gate, "ready"), "w").close()
    go = os.path.join(gate, "go")
    while not os.path.exists(go):  # the Go side's deadline ends this process if it never comes
        time.sleep(0.005)


def release_device(gate):
    if gate:
        open(os.path.join(gate, "done"), "w").close()


def sync(device):
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def mode_ncu(a):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    model, inputs = setup(a, "cuda", gate=a.gate)
    with torch.no_grad():
        for _ in range(a.warmup):  # JIT compiles and autotuning happen here, unprofiled
            model(*inputs)
        sync("cuda")
        nvtx = True
        try:
            torch.cuda.nvtx.range_push(RANGE)
        except Exception:  # NVTX is a label for timeline tools; the marker below is what ncu uses
            nvtx = False
        torch.cuda.profiler.start()
        model(*inputs)
        sync("cuda")
        torch.cuda.profiler.stop()
        if nvtx:
            torch.cuda.nvtx.range_pop()
    release_device(a.gate)
    return {"ok": True, "nvtx": nvtx}


def op_table(prof, device_attr, top):
    rows, total = [], 0.0
    for e in prof.key_averages():
        t = float(getattr(e, device_attr, 0.0) or 0.0)
        if t <= 0:
            continue
        total += t
        rows.append({"op": e.key, "calls": e.count, "time_us": t})
    rows.sort(key=lambda r: -r["time_us"])
    for r in rows:
        share = r["time_us"] / total if total else 0.0
        r["share"] = share
        r["amdahl_headroom"] = (1.0 / (1.0 - share)) if share < 1 else None
    return rows[:top], total


def profiled(model, inputs, device, iters):
    import torch
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(ProfilerActivity.CUDA)
    with torch.no_grad():
        for _ in range(2):
            model(*inputs)
        sync(device)
        with profile(activities=acts) as prof:
            for _ in range(iters):
                model(*inputs)
            sync(device)
    return prof


def timed_calls(model, inputs, min_calls=20, min_s=1.0, max_calls=5000, max_s=3.0):
    """Wall time of each un-profiled forward, after warm-up: the first calls
    build and JIT, and the profiler adds its own start-up and a record per
    op, so neither belongs in the per-call figure. Also the process's CPU
    time over the same calls (every thread's), for how many cores were busy."""
    import torch
    ts = []
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        c0, w0 = os.times(), time.perf_counter()
        while len(ts) < max_calls:
            t0 = time.perf_counter()
            model(*inputs)
            ts.append(time.perf_counter() - t0)
            spent = time.perf_counter() - w0
            if (len(ts) >= min_calls and spent >= min_s) or (len(ts) >= 5 and spent >= max_s):
                break
        wall = time.perf_counter() - w0
        c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    mean = sum(ts) / len(ts)
    ts.sort()
    return {"median_s": ts[len(ts) // 2], "min_s": ts[0], "mean_s": mean, "calls": len(ts), "cores_busy": cpu / wall if wall > 0 else 0.0}


def timed_as_run_kernel(model, inputs):
    """The call's median as run_kernel times it: the harness's own timer
    (evaluate.timing.Timer), a cache flush before each call and, on a busy
    host, the undisturbed calls' statistics. Warm back-to-back calls
    (timed_calls) read faster: a 173 us one-thread softmax read 248 us
    after the flush. None where the harness's timer is not importable."""
    try:
        import torch
        from evaluate.timing import Timer
    except ImportError:
        return None
    timer = Timer(torch.device("cpu"), 32 << 20)

    def fn():
        with torch.no_grad():
            return model(*inputs)
    return timer.bench(fn, 1.0)


def mode_cpu(a):
    import torch
    t0 = time.perf_counter()
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    model, inputs = setup(a, "cpu")
    calls = timed_calls(model, inputs)
    setup_s = time.perf_counter() - t0 - calls["mean_s"] * calls["calls"]
    cold = timed_as_run_kernel(model, inputs)
    prof = profiled(model, inputs, "cpu", a.iters)
    rows, total = op_table(prof, "self_cpu_time_total", a.top)
    for r in rows:
        r["time_us"] /= a.iters
    return {"device": "cpu", "iters": a.iters, "ops": rows, "total_us": total / a.iters,
            "wall_us_per_iter": calls["median_s"] * 1e6, "wall_min_us": calls["min_s"] * 1e6, "wall_mean_us": calls["mean_s"] * 1e6,
            "calls_timed": calls["calls"], "cores_busy": calls["cores_busy"],
            "threads": torch.get_num_threads(), "cpus": os.cpu_count() or 1, "setup_s": max(0.0, setup_s),
            "timed_us_per_iter": cold["median_s"] * 1e6 if cold else 0.0, "timed_iters": cold["iters"] if cold else 0}


def perf_control(a, cmd):
    """Tells a `perf stat --control` watching this process to start or
    stop counting, and waits for its ack, so the counters cover the timed
    loop only: not the interpreter's start-up, torch's import or a build."""
    if not a.perf_ctl:
        return
    with open(a.perf_ctl, "w") as ctl:
        ctl.write(cmd + "\n")
    with open(a.perf_ack) as ack:
        ack.readline()


def mode_loop(a):
    model, inputs = setup(a, "cpu")
    import torch
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        perf_control(a, "enable")
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < a.seconds:
            model(*inputs)
            n += 1
        secs = time.perf_counter() - t0
        perf_control(a, "disable")
    return {"iters": n, "seconds": secs}


UNATTRIBUTED = "(kernels launched outside any operator)"


def nest_ops(launches, op_calls, device_kernels, iters, top):
    """Ranks operators by the device time of the kernels each launched, with
    those kernels nested under it: one level is ranked, so shares add to at
    most 1. (torch's key_averages() lists an op such as aten::addmm and its
    cuBLAS kernel side by side, each with the same self device time.)

    launches: (op, kernel, duration_us) for every kernel an op launched;
    op_calls: op -> calls; device_kernels: (kernel, duration_us) for every
    kernel the device ran, attributed or not. Times come out per forward;
    calls are counted over all iters, as key_averages() counts them."""
    ops = {}
    attributed = {}
    for op, kname, dur in launches:
        o = ops.setdefault(op, {"op": op, "calls": op_calls.get(op, 0), "time_us": 0.0, "kernels": {}})
        k = o["kernels"].setdefault(kname, {"name": kname, "calls": 0, "time_us": 0.0})
        o["time_us"] += dur
        k["calls"] += 1
        k["time_us"] += dur
        attributed[kname] = attributed.get(kname, 0.0) + dur
    ran = {}
    for kname, dur in device_kernels:
        r = ran.setdefault(kname, {"calls": 0, "time_us": 0.0})
        r["calls"] += 1
        r["time_us"] += dur
    total = sum(r["time_us"] for r in ran.values())
    # Kernels no operator claims (launched by a library or a raw launcher
    # outside any op) still take device time: rank them as one group.
    for kname, r in ran.items():
        rest = r["time_us"] - attributed.get(kname, 0.0)
        if rest > 1e-9 * max(1.0, r["time_us"]):
            o = ops.setdefault(UNATTRIBUTED, {"op": UNATTRIBUTED, "calls": 0, "time_us": 0.0, "kernels": {}})
            o["kernels"][kname] = {"name": kname, "calls": r["calls"], "time_us": rest}
            o["time_us"] += rest
    total = max(total, sum(o["time_us"] for o in ops.values()))
    rows = [o for o in ops.values() if o["time_us"] > 0]
    rows.sort(key=lambda o: -o["time_us"])
    for o in rows:
        share = o["time_us"] / total if total else 0.0
        o["share"] = share
        o["amdahl_headroom"] = (1.0 / (1.0 - share)) if share < 1 else None
        o["time_us"] /= iters
        ks = sorted(o["kernels"].values(), key=lambda k: -k["time_us"])
        for k in ks:
            k["share"] = k["time_us"] / total if total else 0.0
            k["time_us"] /= iters
        o["kernels"] = ks
    return rows[:top], total / iters


def device_op_table(prof, iters, top):
    from torch.autograd import DeviceType
    launches, op_calls, device_kernels = [], {}, []
    for evt in prof.events():
        if evt.device_type == DeviceType.CPU:
            if evt.is_async:
                continue
            op_calls[evt.key] = op_calls.get(evt.key, 0) + 1
            for k in evt.kernels:
                launches.append((evt.key, k.name, float(k.duration)))
        else:
            device_kernels.append((evt.key, float(evt.time_range.elapsed_us())))
    return nest_ops(launches, op_calls, device_kernels, iters, top)


def mode_model(a):
    import torch
    device = a.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model, inputs = setup(a, device, want_candidate=False)
    prof = profiled(model, inputs, device, a.iters)
    if device == "cuda":
        rows, total = device_op_table(prof, a.iters, a.top)
        basis = "device (GPU) time of the kernels each operator launched"
    else:
        rows, total = op_table(prof, "self_cpu_time_total", a.top)
        for r in rows:
            r["time_us"] /= a.iters
        total /= a.iters
        basis = "self CPU time"
    return {"device": device, "iters": a.iters, "ops": rows, "total_us": total, "time_basis": basis}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["ncu", "cpu", "loop", "model"])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--candidate")
    ap.add_argument("--pydir", help="harness py dir (for `from kevolve import ...`)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--perf-ctl", help="perf stat's control FIFO (loop mode)")
    ap.add_argument("--perf-ack", help="perf stat's ack FIFO (loop mode)")
    ap.add_argument("--gate", help="the device hold's handshake folder (ncu mode; hold_device)")
    ap.add_argument("--jail", help="the folder of the jail's own (sandbox/profiled.py), needs --pydir")
    ap.add_argument("--jail-no-network", action="store_true", help="the jail gets a network namespace of its own under Nsight Compute too")
    ap.add_argument("--jail-cgroup", action="store_true", help="a cgroup holds the jail's processes, not a PID namespace")
    ap.add_argument("--deadline-s", type=float, default=0, help="when the jail's cgroup is killed")
    a = ap.parse_args()
    if a.pydir:
        sys.path.insert(0, a.pydir)
    if a.mode in ("ncu", "cpu", "loop") and not a.candidate:
        print(json.dumps({"error": "mode %s needs --candidate" % a.mode}))
        return 2
    try:
        jail = enter_jail(a)
        res = {"ncu": mode_ncu, "cpu": mode_cpu, "loop": mode_loop, "model": mode_model}[a.mode](a)
    except Exception as e:
        print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        return 1
    if jail is not None:
        res["sandbox"] = {k: jail.get(k, {}) for k in ("active", "missing", "replaced", "kept")}
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Device state a candidate could change to speed itself up or slow the
reference, read and restored through the CUDA driver API (libcuda, the
context's own view; torch exposes none of it).

On the H100 a candidate that set a persisting-L2 carve-out
(cudaLimitPersistingL2CacheSize) and an access-policy window on the current
stream passed at 1.95x where the same kernel without it got 1.71x: the
read-based flush before each timed call does not evict persisting lines,
and the next honest evaluations in that kept child were inflated the same
way. So the harness records, once its context exists and before any
candidate code runs:
  - the context's limits: stack size, printf FIFO, malloc heap, device
    runtime sync depth and pending launches, max L2 fetch granularity,
    persisting L2 cache size;
  - the context's cache configuration;
  - the launch attributes of the streams the harness uses (the current and
    the default stream): access-policy window, synchronization policy,
    priority, memory sync domain and its map;
and compares before the reference is timed (any change is an
integrity_violation, check device_state) and before a kept child serves
another job (a change the harness cannot undo means no reuse). The
persisting lines themselves are reset (cuCtxResetPersistingL2Cache) at
both points, whatever the comparison says."""
import ctypes

import torch

# CUlimit
LIMITS = {"stack_size": 0, "printf_fifo_size": 1, "malloc_heap_size": 2, "dev_runtime_sync_depth": 3,
          "dev_runtime_pending_launch_count": 4, "max_l2_fetch_granularity": 5, "persisting_l2_cache_size": 6}
# CUlaunchAttributeID values valid on streams
STREAM_ATTRS = {"access_policy_window": 1, "synchronization_policy": 3, "priority": 8, "mem_sync_domain_map": 9,
                "mem_sync_domain": 10}
VALUE_BYTES = 64  # sizeof(CUlaunchAttributeValue)

_LIB = {}
# The harness's state of this process's context, taken at its first job.
_BASE = {}


def _cuda():
    if "lib" not in _LIB:
        try:
            _LIB["lib"] = ctypes.CDLL("libcuda.so.1")
        except OSError:
            _LIB["lib"] = None
    return _LIB["lib"]


def _streams(device):
    cur = torch.cuda.current_stream(device).cuda_stream
    dft = torch.cuda.default_stream(device).cuda_stream
    return {"current": cur, "default": dft} if cur != dft else {"current": cur}


def read(device):
    """The context's limits, cache config and stream attributes (values,
    or the driver's error code as "err N")."""
    lib = _cuda()
    if lib is None or device.type != "cuda":
        return {}
    st = {}
    v = ctypes.c_size_t(0)
    for name, lim in LIMITS.items():
        rc = lib.cuCtxGetLimit(ctypes.byref(v), ctypes.c_int(lim))
        st["limit." + name] = int(v.value) if rc == 0 else "err %d" % rc
    c = ctypes.c_int(0)
    rc = lib.cuCtxGetCacheConfig(ctypes.byref(c))
    st["cache_config"] = int(c.value) if rc == 0 else "err %d" % rc
    buf = ctypes.create_string_buffer(VALUE_BYTES)
    for sname, handle in _streams(device).items():
        for aname, attr in STREAM_ATTRS.items():
            ctypes.memset(buf, 0, VALUE_BYTES)
            rc = lib.cuStreamGetAttribute(ctypes.c_void_p(handle), ctypes.c_int(attr), buf)
            st["stream.%s.%s" % (sname, aname)] = buf.raw.hex() if rc == 0 else "err %d" % rc
    return st


def begin(device):
    """At a job's start, once the context exists and before the candidate
    loads: the first job of a process records the harness's state; a later
    job (a kept child) finds it as recorded or restores it. Returns a
    description of what had to be restored ("" if nothing)."""
    if device.type != "cuda" or _cuda() is None:
        return ""
    reset_persisting()
    key = str(device)
    if key not in _BASE:
        _BASE[key] = read(device)
        return ""
    diff = changes(device)
    if not diff:
        return ""
    if not restore(device):
        raise RuntimeError("device state changed by an earlier job could not be restored: %s" % "; ".join(diff[:5]))
    return "restored device state an earlier job left changed: %s" % "; ".join(diff[:5])


# Limits the driver raises by itself: launching a kernel that needs more
# local memory per thread than the stack size sets the stack size to what it
# needs (an honest kernel with local arrays: llm/attention's start kernel).
# Growth of these is no verdict; a kept child still gets them restored.
GROWN_BY_DRIVER = ("limit.stack_size",)


def changes(device, allow_growth=()):
    """What differs from the harness's recorded state, as text; keys in
    allow_growth count only when they are below what was recorded."""
    base = _BASE.get(str(device))
    if base is None or device.type != "cuda":
        return []
    now = read(device)
    return ["%s: %s, was %s" % (k, _short(now.get(k)), _short(v)) for k, v in base.items()
            if now.get(k) != v and not (k in allow_growth and _grew(v, now.get(k)))]


def _grew(was, now):
    return isinstance(was, int) and isinstance(now, int) and now > was


def check(device, checks, where):
    """The device_state check (before the reference is timed): a change is
    an integrity_violation; the persisting lines are reset either way."""
    if device.type != "cuda" or _cuda() is None:
        return True
    diff = changes(device, GROWN_BY_DRIVER)
    reset_persisting()
    checks.add("device_state", not diff, ("%s the candidate had changed the device's state: %s" % (where, "; ".join(diff[:8])))
               if diff else "", "integrity_violation")
    return not diff


def keep(device, ok, why):
    """May this child serve another job? Not with device state it cannot restore."""
    if device is None or device.type != "cuda" or _cuda() is None:
        return ok, why
    try:
        reset_persisting()
        diff = changes(device)
        if diff and not restore(device):
            return False, "device state could not be restored: %s" % "; ".join(diff[:3])
    except Exception as e:  # noqa: BLE001 - anything odd: a fresh process
        return False, "device state unreadable: %s" % e
    return ok, why


def reset_persisting():
    lib = _cuda()
    if lib is not None:
        lib.cuCtxResetPersistingL2Cache()


def restore(device):
    """Sets every recorded limit, the cache config and the stream
    attributes back; True when the state then reads as recorded."""
    base = _BASE.get(str(device))
    lib = _cuda()
    if base is None or lib is None:
        return False
    for name, lim in LIMITS.items():
        v = base.get("limit." + name)
        if isinstance(v, int):
            lib.cuCtxSetLimit(ctypes.c_int(lim), ctypes.c_size_t(v))
    if isinstance(base.get("cache_config"), int):
        lib.cuCtxSetCacheConfig(ctypes.c_int(base["cache_config"]))
    for sname, handle in _streams(device).items():
        for aname, attr in STREAM_ATTRS.items():
            v = base.get("stream.%s.%s" % (sname, aname))
            if isinstance(v, str) and not v.startswith("err"):
                buf = ctypes.create_string_buffer(bytes.fromhex(v), VALUE_BYTES)
                lib.cuStreamSetAttribute(ctypes.c_void_p(handle), ctypes.c_int(attr), buf)
    reset_persisting()
    return not changes(device)


def _short(v):
    if isinstance(v, str) and len(v) > 40:
        s = v.rstrip("0")
        return (s or "0")[:40] + "..."
    return v

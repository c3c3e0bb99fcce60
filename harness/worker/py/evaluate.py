"""One evaluation of a candidate (ModelNew) against a KernelBench-format
reference (Model, get_inputs, get_init_inputs), run in a forked child.

main(args, ctx) returns a dict: verdict, stage, checks, timing stats,
warnings. Every kernel failure becomes a verdict; only a broken reference
or request becomes {"harness_error": ...}.
"""
import contextlib
import importlib.util
import math
import os
import sys
import threading
import time
import re
import traceback

import torch

VERDICT_ORDER = ("integrity_violation", "compile_error", "runtime_error", "incorrect")

# Ops that are glue, not the work: shape queries, views, moves, creation,
# plain arithmetic. A candidate may call these freely.
TRIVIAL_OPS = {
    "size", "dim", "numel", "shape", "stride", "dtype", "device", "is_contiguous", "data_ptr",
    "storage_offset", "element_size", "view", "reshape", "flatten", "unflatten", "squeeze",
    "unsqueeze", "permute", "transpose", "t", "contiguous", "expand", "expand_as", "view_as",
    "reshape_as", "narrow", "select", "__getitem__", "__setitem__", "split", "chunk", "unbind",
    "to", "cuda", "cpu", "float", "half", "bfloat16", "double", "int", "long", "bool", "type",
    "type_as", "clone", "detach", "copy_", "empty", "empty_like", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "arange",
    "tensor", "as_tensor", "fill_", "zero_", "__add__", "__radd__", "__iadd__", "__sub__",
    "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__",
    "__itruediv__", "__neg__", "add", "sub", "mul", "div", "add_", "mul_", "sub_", "div_",
    "__len__", "__iter__", "__bool__", "__format__", "__repr__", "__hash__", "__eq__", "__ne__",
    "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__or__", "item", "tolist", "is_floating_point",
    "requires_grad_", "__get__", "__set__", "_has_compatible_shallow_copy_type", "cat", "stack",
    "is_complex", "get_device", "untyped_storage", "storage", "__reduce_ex__", "__deepcopy__",
    "__index__", "__int__", "__float__", "__contains__", "__array__", "__setstate__", "data",
    "grad", "requires_grad", "is_cuda", "layout", "ndim", "T", "mT", "names", "is_leaf",
    "device_type", "new_tensor", "empty_strided", "as_strided",
}
# Ops that are the work of a kernel problem. When the reference calls some
# of these, they are its "main" ops and a candidate calling one of them is
# calling the reference; the reference's glue (relu after a GEMM, say) stays
# allowed. A reference with none of these has all its non-trivial ops as main.
HEAVY_OPS = {
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "linear", "bilinear",
    "softmax", "log_softmax", "softmin", "normalize", "layer_norm", "rms_norm", "group_norm",
    "batch_norm", "instance_norm", "local_response_norm", "norm", "vector_norm", "matrix_norm",
    "scaled_dot_product_attention", "multi_head_attention_forward", "embedding", "embedding_bag",
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort", "topk", "kthvalue",
    "argmax", "argmin", "einsum", "tensordot", "dot", "vdot", "inner", "outer", "cdist",
    "logsumexp", "bucketize", "searchsorted", "segment_reduce", "scatter_add", "scatter_reduce",
    "index_add", "index_reduce", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "cosine_similarity", "pairwise_distance",
    "triplet_margin_loss", "hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss",
    "mean", "sum", "nansum", "amax", "amin", "max", "min", "aminmax", "var", "std", "var_mean",
    "std_mean", "prod", "median", "mode", "quantile", "interpolate", "grid_sample", "unfold", "fold",
    "pixel_shuffle", "gelu", "silu", "mish", "glu", "histc", "bincount", "unique", "fft", "rfft",
}
HEAVY_PREFIXES = ("conv", "max_pool", "avg_pool", "adaptive_", "lp_pool", "fractional_max_pool",
                  "_scaled_dot", "_flash", "_efficient_attention", "lstm", "gru", "rnn", "fft_")


def is_heavy(name):
    return name in HEAVY_OPS or name.startswith(HEAVY_PREFIXES)


class Check:
    def __init__(self):
        self.items = []
        self.by_name = {}

    def add(self, name, passed, detail="", verdict=None):
        """Records a check; the first failure of a name wins, later passes of
        the same name only append to the count."""
        c = self.by_name.get(name)
        if c is None:
            c = {"name": name, "passed": bool(passed), "detail": str(detail)[:2000]}
            c["_verdict"] = None if passed else verdict
            self.items.append(c)
            self.by_name[name] = c
        elif not passed and c["passed"]:
            c["passed"] = False
            c["detail"] = str(detail)[:2000]
            c["_verdict"] = verdict
        return passed

    def failed(self):
        return [c for c in self.items if not c["passed"]]

    def export(self):
        return [{k: v for k, v in c.items() if not k.startswith("_")} for c in self.items]


class KernelFailure(Exception):
    def __init__(self, verdict, stage, detail):
        super().__init__(detail)
        self.verdict, self.stage, self.detail = verdict, stage, detail


class HarnessError(Exception):
    pass


_ERROR_LINE = re.compile(r"(\berror\b|\bError\b|undefined reference|ptxas fatal)")


def _fmt_exc(e, limit=6000):
    """What an agent needs to fix the kernel, first: the compiler's error
    lines (a load_inline build puts the whole ninja log, long command lines
    included, into the exception), then the exception, then the traceback's
    last frames. Check details keep only their head."""
    msg = "%s: %s" % (type(e).__name__, e)
    errs = []
    lines = msg.splitlines()
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line) and len(line) < 400:
            errs.extend(lines[i:i + 3])
        if sum(len(x) for x in errs) > 1500:
            break
    head = ("compiler errors:\n" + "\n".join(dict.fromkeys(errs)) + "\n\n") if errs else ""
    tb = "".join(traceback.format_exception(e))
    s = head + msg[-2000:] + "\n--- traceback (last frames) ---\n" + tb[-2000:]
    return s[:limit]


def is_compile_exception(e):
    names = {c.__name__ for c in type(e).__mro__}
    if names & {"SyntaxError", "ImportError", "CompileError", "CompilationError",
                "IndentationError", "ModuleNotFoundError"}:
        return True
    msg = str(e)
    return "Error building extension" in msg or "ninja: build stopped" in msg


def load_module(src, name, work_dir):
    """Imports a source ({"path"} or {"code"}) as a fresh module. Inline code
    is written to a file first: Triton and inspect need the source on disk."""
    path = src.get("path")
    if not path:
        path = os.path.join(work_dir, name + ".py")
        with open(path, "w") as f:
            f.write(src.get("code") or "")
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    if d not in sys.path:
        sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- tracing

class LaunchCounter:
    """Counts custom-kernel launches: Triton kernels, objects returned by the
    kevolve loaders, load_inline / cpp_extension modules, cupy kernels."""

    def __init__(self):
        self.n = 0
        self.kinds = set()

    def hit(self, kind):
        self.n += 1
        self.kinds.add(kind)


class _CountingProxy:
    def __init__(self, obj, counter, kind):
        object.__setattr__(self, "_kv_obj", obj)
        object.__setattr__(self, "_kv_counter", counter)
        object.__setattr__(self, "_kv_kind", kind)

    def __getattr__(self, name):
        v = getattr(self._kv_obj, name)
        if callable(v) and not name.startswith("__") and not isinstance(v, type):
            counter, kind = self._kv_counter, self._kv_kind

            def call(*a, **k):
                counter.hit(kind)
                return v(*a, **k)
            call.__name__ = getattr(v, "__name__", name)
            call.__doc__ = getattr(v, "__doc__", None)
            return call
        return v

    def __setattr__(self, name, value):
        setattr(self._kv_obj, name, value)

    def __call__(self, *a, **k):
        self._kv_counter.hit(self._kv_kind)
        return self._kv_obj(*a, **k)

    def __dir__(self):
        return dir(self._kv_obj)


def triton_interpreter(want):
    """Makes a later `import triton` match the wanted mode. Triton fixes the
    mode of its own library functions at import, so a mismatch means
    dropping the parent's imported copy and importing afresh."""
    os.environ["TRITON_INTERPRET"] = "1" if want else "0"
    mod = sys.modules.get("triton")
    if mod is None:
        return
    # knobs read the environment lazily, so the parent records the mode it
    # imported Triton in; unknown means reimport.
    have = getattr(mod, "_kevolve_interpret_at_import", None)
    if have == want:
        return
    for name in list(sys.modules):
        if name == "triton" or name.startswith("triton."):
            del sys.modules[name]


def install_launch_hooks(counter, uses_ext=True):
    def wrap_loader(mod, attr, kind):
        f = getattr(mod, attr, None)
        if f is None or getattr(f, "_kv_wrapped", False):
            return

        def loader(*a, **k):
            return _CountingProxy(f(*a, **k), counter, kind)
        loader._kv_wrapped = True
        loader.__doc__ = f.__doc__
        setattr(mod, attr, loader)

    try:
        import kevolve
        for attr in ("load_cuda", "load_c", "load_hip"):
            wrap_loader(kevolve, attr, "kevolve")
    except Exception:  # noqa: BLE001 - loader package optional
        pass
    try:
        if uses_ext or "torch.utils.cpp_extension" in sys.modules:
            import torch.utils.cpp_extension as ce
            for attr in ("load_inline", "load"):
                wrap_loader(ce, attr, "cpp_extension")
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import jit as tjit
        orig = tjit.JITFunction.run
        if not getattr(orig, "_kv_wrapped", False):
            def run(self, *a, **k):
                counter.hit("triton")
                return orig(self, *a, **k)
            run._kv_wrapped = True
            tjit.JITFunction.run = run
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import interpreter as tint
        orig_i = tint.InterpretedFunction.run
        if not getattr(orig_i, "_kv_wrapped", False):
            def irun(self, *a, **k):
                counter.hit("triton")
                return orig_i(self, *a, **k)
            irun._kv_wrapped = True
            tint.InterpretedFunction.run = irun
    except Exception:  # noqa: BLE001
        pass
    try:
        import cupy
        for cls in (cupy.RawKernel, cupy.ElementwiseKernel):
            orig_c = cls.__call__
            if getattr(orig_c, "_kv_wrapped", False):
                continue

            def ccall(self, *a, _o=orig_c, **k):
                counter.hit("cupy")
                return _o(self, *a, **k)
            ccall._kv_wrapped = True
            try:
                cls.__call__ = ccall
            except TypeError:
                pass
    except Exception:  # noqa: BLE001
        pass


def op_name(func):
    n = getattr(func, "__name__", None) or repr(func)
    return n


class OpRecorder(torch.overrides.TorchFunctionMode):
    """Records the top-level torch functions a forward calls (nested calls
    inside a torch function run with the mode popped and are not seen)."""

    def __init__(self):
        super().__init__()
        self.ops = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        n = op_name(func)
        self.ops[n] = self.ops.get(n, 0) + 1
        return func(*args, **(kwargs or {}))


def main_ops(ref_ops):
    nontrivial = {o for o in ref_ops if o not in TRIVIAL_OPS}
    heavy = {o for o in nontrivial if is_heavy(o)}
    return heavy or nontrivial


# ---------------------------------------------------------------- helpers

def flatten(out):
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r.extend(flatten(o))
        return r
    return [out]


def to_device(x, device):
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def clone_tree(x):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(clone_tree(v) for v in x)
    return x


def tensors_of(x):
    return [t for t in flatten(x) if isinstance(t, torch.Tensor)]


def same_tensor_values(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))) and \
            bool(torch.equal(torch.isnan(a), torch.isnan(b)))
    return bool(torch.equal(a, b))


def storage_range(t):
    if t.numel() == 0:
        return None
    st = t.untyped_storage()
    return (st.data_ptr(), st.data_ptr() + st.nbytes())


def overlaps(a, b):
    ra, rb = storage_range(a), storage_range(b)
    if ra is None or rb is None or a.device != b.device:
        return False
    return ra[0] < rb[1] and rb[0] < ra[1]


DEFAULT_TOL = {
    torch.float32: (1e-4, 1e-4, 1e-3),
    torch.float64: (1e-7, 1e-7, 1e-6),
    torch.float16: (1e-2, 1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2, 2e-2),
}


def tolerance(dtype, override):
    atol, rtol, rel = DEFAULT_TOL.get(dtype, (1e-4, 1e-4, 1e-3))
    if override:
        atol = override.get("atol") or atol
        rtol = override.get("rtol") or rtol
        rel = override.get("rel_norm") or rel
    return atol, rtol, rel


def compare(i, ref, out, tol_override):
    """Returns (ok, check_name, detail) for one output tensor."""
    if out.shape != ref.shape:
        return False, "shape", "output %d: shape %s, expected %s" % (i, tuple(out.shape), tuple(ref.shape))
    if out.dtype != ref.dtype:
        return False, "dtype", "output %d: dtype %s, expected %s" % (i, out.dtype, ref.dtype)
    if out.device != ref.device:
        return False, "device", "output %d: on %s, expected %s" % (i, out.device, ref.device)
    if ref.is_contiguous() and not out.is_contiguous():
        return False, "contiguity", "output %d: not contiguous (strides %s)" % (i, out.stride())
    if not (ref.is_floating_point() or ref.is_complex()):
        if torch.equal(out, ref):
            return True, "allclose", ""
        bad = (out != ref).sum().item()
        return False, "allclose", "output %d: %d of %d integer elements differ" % (i, bad, ref.numel())
    atol, rtol, rel = tolerance(ref.dtype, tol_override)
    o, r = out.double(), ref.double()
    ref_fin = torch.isfinite(r)
    out_fin = torch.isfinite(o)
    nonfinite = (~out_fin & ref_fin).sum().item()
    if nonfinite:
        return False, "finite", "output %d: %d NaN/Inf elements where the reference is finite (unwritten memory is NaN-poisoned)" % (i, nonfinite)
    if not torch.equal(ref_fin, out_fin) or not torch.equal(torch.isnan(r), torch.isnan(o)):
        return False, "finite", "output %d: non-finite pattern differs from the reference" % i
    o = torch.where(ref_fin, o, 0.0)
    r = torch.where(ref_fin, r, 0.0)
    diff = (o - r).abs()
    maxerr = diff.max().item() if diff.numel() else 0.0
    close = diff <= atol + rtol * r.abs()
    if not bool(close.all()):
        nbad = (~close).sum().item()
        idx = int((diff - (atol + rtol * r.abs())).argmax().item())
        return False, "allclose", ("output %d: %d of %d elements outside atol=%g rtol=%g; max abs err %.3g; "
                                   "worst at flat index %d: got %.6g, expected %.6g") % (
            i, nbad, r.numel(), atol, rtol, maxerr, idx, o.flatten()[idx].item(), r.flatten()[idx].item())
    rn = r.norm().item()
    dn = diff.norm().item()
    if rn == 0.0:
        if dn > atol:
            return False, "relative_norm", "output %d: reference is all zeros, candidate norm %.3g" % (i, dn)
    elif dn / rn > rel:
        return False, "relative_norm", ("output %d: ||out-ref||/||ref|| = %.3g > %g (||ref|| = %.3g): passes allclose only "
                                        "because the values are tiny") % (i, dn / rn, rel, rn)
    return True, "allclose", "max abs err %.3g, rel norm err %.3g" % (maxerr, (dn / rn) if rn else 0.0)


# ---------------------------------------------------------------- poison

def poison_allocator(device):
    """Fills the memory the candidate's next allocations will come from with
    NaN, so output it never writes shows up. torch.empty itself is filled
    with NaN by the deterministic-fill mode enabled around candidate calls."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        n = min(int(free * 0.5), 4 << 30)
        blocks = []
        size = 256 << 20
        try:
            while n > 0:
                b = torch.empty(min(size, n) // 4, dtype=torch.float32, device=device)
                b.fill_(float("nan"))
                blocks.append(b)
                n -= size
        except RuntimeError:
            pass
        total = sum(b.numel() * 4 for b in blocks)
        del blocks  # freed into the caching allocator, NaN-filled
        torch.cuda.synchronize(device)
        return "%d MiB of the CUDA caching allocator filled with NaN; torch.empty filled with NaN" % (total >> 20)
    return "torch.empty filled with NaN (deterministic fill)"


@contextlib.contextmanager
def nan_fill():
    """torch.empty* returns NaN-filled memory while active. Uses torch._C
    directly: torch.use_deterministic_algorithms imports inductor (3 s)."""
    C = torch._C
    prev = (C._get_deterministic_algorithms(), C._get_deterministic_algorithms_warn_only(),
            C._get_deterministic_fill_uninitialized_memory())
    C._set_deterministic_algorithms(True, warn_only=True)
    C._set_deterministic_fill_uninitialized_memory(True)
    try:
        yield
    finally:
        C._set_deterministic_algorithms(prev[0], warn_only=prev[1])
        C._set_deterministic_fill_uninitialized_memory(prev[2])


# ---------------------------------------------------------------- timing

class Timer:
    def __init__(self, device, flush_bytes):
        self.device = device
        self.flush = None
        self.spin_cycles = 0
        if device.type == "cuda":
            self.flush = torch.ones(flush_bytes // 4, dtype=torch.int32, device=device)
            # Before each start event the GPU is kept busy a little longer
            # than the host needs to enqueue one forward, so the timed region
            # starts with the kernels already queued: launch latency and
            # Python overhead stay out of the kernel's time.
            self.spin_cycles = int(args_spin_cycles(device))
        else:
            self.flush = torch.ones(flush_bytes // 4, dtype=torch.int32)

    def clear_cache(self):
        """Evict the last-level cache by reading a buffer larger than it.
        A read leaves the cache full of clean lines; a write (zero_) left
        ~50 MB of dirty ones on an H100 that the timed kernel then paid to
        write back: a 44 us memory-bound kernel read 17% above Nsight
        Compute's duration, which starts from an invalidated L2, and reads
        within 2% of it with this flush."""
        self.flush.sum()

    def pre(self):
        """What runs before each timed iteration: the cache flush, then the spin."""
        self.clear_cache()
        if self.spin_cycles:
            torch.cuda._sleep(self.spin_cycles)

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def bench(self, fn, cap_s, min_iters=25, max_iters=1000, target_rse=0.005):
        """Adaptive: stops once the median's relative standard error (from a
        robust sigma, 1.4826 MAD) is under target_rse, or at max_iters/cap_s."""
        t_start = time.perf_counter()
        # Warm-up: at least 3 calls and about 25 ms.
        for _ in range(3):
            fn()
        self.sync()
        w0 = time.perf_counter()
        n = 0
        while time.perf_counter() - w0 < 0.025 and n < 50:
            fn()
            n += 1
            self.sync()
        times = []
        cuda = self.device.type == "cuda"
        batch = 10
        while True:
            if cuda:
                evs = []
                for _ in range(batch):
                    self.pre()
                    s = torch.cuda.Event(enable_timing=True)
                    e = torch.cuda.Event(enable_timing=True)
                    s.record()
                    fn()
                    e.record()
                    evs.append((s, e))
                torch.cuda.synchronize(self.device)
                times.extend(s.elapsed_time(e) / 1e3 for s, e in evs)
            else:
                for _ in range(batch):
                    self.clear_cache()
                    t0 = time.perf_counter_ns()
                    fn()
                    times.append((time.perf_counter_ns() - t0) / 1e9)
            k = len(times)
            st = stats(times)
            elapsed = time.perf_counter() - t_start
            if k >= min_iters and (st["rse"] < target_rse or k >= max_iters or elapsed > cap_s):
                return st
            batch = min(max(10, k // 2), max_iters - k)


def check_stream_work(timer, cand_fn, ref_fn, timed_median, checks):
    """Work the candidate leaves running on another stream escapes the
    events on the current one. Seven more calls, timed as the benchmark
    times them, catch it two ways:
    - tail: after the current stream's end event completes, the device still
      needs this long to go idle: work outlived the stream it was timed on.
      The reference (plain torch on the current stream) measured the same
      way gives the platform's own tail (a device sync is not free: up to
      ~80 us on the H100);
    - the events of these calls read far above the benchmark's median: the
      hidden work landed inside the events sometimes (streams that the
      hardware happens to serialize), so the median cannot be trusted.
    Host time is kept out of both, so a candidate that is slow in Python
    is not mistaken for one that hides work."""
    _, base = _stream_tails(timer, ref_fn)
    me, mt = _stream_tails(timer, cand_fn)
    tail_ok = mt <= 2 * base + 50e-6 + 0.2 * timed_median
    evt_ok = me <= 3 * timed_median + 200e-6
    why = ""
    if not tail_ok:
        why = ": the device stays busy %.3g s after the timed stream is done; work runs outside the current stream" % mt
    elif not evt_ok:
        why = ": the same calls read %.1fx the timed median; work on another stream lands in the timing only sometimes" % (me / timed_median)
    checks.add("stream_work", tail_ok and evt_ok,
               "timed median %.3g s; event-timed median of 7 more calls %.3g s, device busy %.3g s after them (reference: %.3g s)%s" % (
                   timed_median, me, mt, base, why), "integrity_violation")


def _stream_tails(timer, fn):
    """Median event time of fn and median time the device stays busy after
    the current stream's end event, over seven synchronized calls."""
    evt, tail = [], []
    for _ in range(7):
        timer.sync()
        timer.pre()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        t1 = time.perf_counter()
        timer.sync()
        tail.append(time.perf_counter() - t1)
        evt.append(s.elapsed_time(e) / 1e3)
    return sorted(evt)[3], sorted(tail)[3]


def args_spin_cycles(device, host_s=300e-6):
    """Cycles of torch.cuda._sleep that cover host_s at the SM clock."""
    try:
        khz = torch.cuda.get_device_properties(device).clock_rate  # kHz
    except Exception:  # noqa: BLE001
        khz = 2_000_000
    return host_s * khz * 1e3


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


# ---------------------------------------------------------------- main

def main(args, ctx):
    t_begin = time.monotonic()
    budget = float(args.get("budget_s") or 600)

    def remaining():
        return budget - (time.monotonic() - t_begin)

    checks = Check()
    warnings = []
    res = {"checks": None, "warnings": warnings, "target": args.get("target", "cpu")}
    work_dir = ctx.job_dir
    stage_s = {}
    res["stage_s"] = stage_s
    last = [None, time.monotonic()]
    progress = ctx.progress

    def timed_progress(stage, done=0, total=0):
        now = time.monotonic()
        if last[0] is not None and last[0] != stage:
            stage_s[last[0]] = round(stage_s.get(last[0], 0) + now - last[1], 4)
            last[1] = now
        elif last[0] is None:
            last[1] = now
        last[0] = stage
        progress(stage, done, total)
    ctx.progress = timed_progress
    try:
        _evaluate(args, ctx, checks, warnings, res, work_dir, remaining)
    except HarnessError as e:
        return {"harness_error": str(e)}
    except KernelFailure as e:
        res["verdict"] = e.verdict
        res["stage"] = e.stage
        if e.detail:
            res["error"] = e.detail
    if last[0] is not None:
        stage_s[last[0]] = round(stage_s.get(last[0], 0) + time.monotonic() - last[1], 4)
    res["checks"] = checks.export()
    if "verdict" not in res:
        v = None
        for want in VERDICT_ORDER:
            if any(c["_verdict"] == want for c in checks.failed()):
                v = want
                break
        if v is None and checks.failed():
            v = "incorrect"
        res["verdict"] = v or "pass"
        if v and "stage" not in res:
            res["stage"] = "integrity" if v == "integrity_violation" else "correctness"
    res["correct"] = res["verdict"] == "pass"
    return res


def _evaluate(args, ctx, checks, warnings, res, work_dir, remaining):
    target = args.get("target", "cpu")
    seed = int(args.get("seed") or 42)
    trials = int(args.get("trials") or 5)
    tol = args.get("tolerance") or None
    if target == "nvidia":
        if not torch.cuda.is_available():
            raise HarnessError("target nvidia: torch.cuda.is_available() is False in the worker")
        if torch.cuda._is_in_bad_fork():
            raise HarnessError("target nvidia: the worker parent initialized CUDA before forking; children cannot use it")
        device = torch.device("cuda", 0)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        device = torch.device("cpu")
    orig_timers = {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
                   "Event.elapsed_time": torch.cuda.Event.elapsed_time,
                   "cuda.synchronize": torch.cuda.synchronize}

    ctx.progress("load_reference")
    try:
        ref_mod = load_module(args["reference"], "kevolve_reference", work_dir)
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(ref_mod, name):
                raise HarnessError("reference defines no %s (KernelBench format: Model, get_inputs, get_init_inputs)" % name)
    except HarnessError:
        raise
    except BaseException as e:  # noqa: BLE001
        raise HarnessError("reference failed to load: %s" % _fmt_exc(e, 3000))

    triton_interpreter(device.type == "cpu")
    cand_code = args["candidate"].get("code") or ""
    if not cand_code and args["candidate"].get("path"):
        with open(args["candidate"]["path"]) as f:
            cand_code = f.read()
    # cpp_extension drags in setuptools (~0.3 s): only for candidates using it.
    uses_ext = "cpp_extension" in cand_code or "load_inline" in cand_code
    try:
        import kevolve
        if uses_ext:
            kevolve.patch_load_inline()  # load_inline builds cached by source hash
    except Exception as e:  # noqa: BLE001 - the loaders are optional
        warnings.append("kevolve loaders unavailable: %r" % (e,))
    counter = LaunchCounter()
    install_launch_hooks(counter, uses_ext)
    ctx.progress("load_candidate")
    t0 = time.monotonic()
    try:
        cand_mod = load_module(args["candidate"], "kevolve_candidate", work_dir)
    except BaseException as e:  # noqa: BLE001
        v = "compile_error" if is_compile_exception(e) else "runtime_error"
        checks.add("load_candidate", False, _fmt_exc(e), v)
        raise KernelFailure(v, "load_candidate", "")
    if not hasattr(cand_mod, "ModelNew"):
        checks.add("load_candidate", False, "candidate defines no ModelNew", "compile_error")
        raise KernelFailure("compile_error", "load_candidate", "")
    checks.add("load_candidate", True, "loaded in %.2f s" % (time.monotonic() - t0))
    res["load_s"] = round(time.monotonic() - t0, 3)

    # The device phase is serialized per device by the Go side.
    if device.type == "cuda":
        ctx.progress("wait_device")
        ctx.gate()
    ctx.progress("init")
    init_inputs = ref_mod.get_init_inputs()
    try:
        torch.manual_seed(seed)
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)
        # Built under the device context: initializing an 8192x8192 Linear
        # on the host costs about a second. Both models draw their weights
        # from the same seed on the same generator, so they still match.
        with torch.device(device):
            ref_model = ref_mod.Model(*clone_tree(init_inputs)).to(device)
    except BaseException as e:  # noqa: BLE001
        raise HarnessError("reference Model(*get_init_inputs()) failed: %s" % _fmt_exc(e, 3000))
    try:
        torch.manual_seed(seed)
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)
        with torch.device(device):
            cand_model = cand_mod.ModelNew(*clone_tree(init_inputs)).to(device)
    except BaseException as e:  # noqa: BLE001
        v = "compile_error" if is_compile_exception(e) else "runtime_error"
        checks.add("construct", False, _fmt_exc(e), v)
        raise KernelFailure(v, "init", "")
    checks.add("construct", True, "")
    # Weights match because both constructions start from the same seed
    # (KernelBench's convention); a candidate that creates its parameters in
    # another order gets other values and fails allclose, as in KernelBench.
    ref_model.eval()
    cand_model.eval()

    poison_detail = poison_allocator(device)
    checks.add("poisoned_allocator", True, poison_detail)

    def make_inputs(s):
        torch.manual_seed(s)
        if device.type == "cuda":
            torch.cuda.manual_seed(s)
        # Factory calls in get_inputs() allocate on the device directly:
        # drawing a few hundred MB of random numbers on the host and copying
        # them over cost seconds per trial. Tensors a problem pins to the
        # CPU explicitly are still moved.
        with torch.device(device):
            return to_device(ref_mod.get_inputs(), device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    threads_before = {t.ident for t in threading.enumerate()}
    stream_before = torch.cuda.current_stream(device) if device.type == "cuda" else None

    def run_candidate(inputs, trial):
        with nan_fill():
            try:
                with torch.no_grad():
                    out = cand_model(*inputs)
                sync()
            except BaseException as e:  # noqa: BLE001
                v = "compile_error" if is_compile_exception(e) else "runtime_error"
                checks.add("run_candidate", False, "trial %d: %s" % (trial, _fmt_exc(e)), v)
                raise KernelFailure(v, "correctness", "")
        return out

    ref_ops_all = {}
    cand_ops_all = {}
    prev = []  # (ref outputs, cand outputs) of earlier trials
    ref_mutates = False
    ref_aliases = False
    ctx.progress("correctness", 0, trials)
    for trial in range(trials):
        if remaining() < 1:
            raise KernelFailure("timeout", "correctness", "time budget exhausted during correctness trials")
        inputs = make_inputs(seed + 1000003 * (trial + 1))
        ref_in = clone_tree(inputs)
        ref_saved = clone_tree(inputs)
        rec = OpRecorder()
        with torch.no_grad(), rec:
            ref_out = ref_model(*ref_in)
        sync()
        for k, v in rec.ops.items():
            ref_ops_all[k] = ref_ops_all.get(k, 0) + v
        if any(not same_tensor_values(a, b) for a, b in zip(tensors_of(ref_in), tensors_of(ref_saved))):
            ref_mutates = True
        if any(overlaps(o, i) for o in tensors_of(ref_out) for i in tensors_of(ref_in)):
            ref_aliases = True

        cand_in = clone_tree(inputs)
        saved = clone_tree(inputs)
        rec = OpRecorder()
        with rec:
            out = run_candidate(cand_in, trial)
        for k, v in rec.ops.items():
            cand_ops_all[k] = cand_ops_all.get(k, 0) + v

        # Output types: a subclass or a lazy object could fake its values.
        outs, refs = flatten(out), flatten(ref_out)
        for o in outs:
            if isinstance(o, torch.Tensor) and type(o) not in (torch.Tensor, torch.nn.Parameter):
                checks.add("output_type", False, "output is a %s, a tensor subclass; return a plain torch.Tensor" % type(o).__name__,
                           "integrity_violation")
                raise KernelFailure("integrity_violation", "correctness", "")
        if len(outs) != len(refs):
            checks.add("output_type", False, "candidate returned %d outputs, the reference %d" % (len(outs), len(refs)), "incorrect")
            raise KernelFailure("incorrect", "correctness", "")
        for i, (o, r) in enumerate(zip(outs, refs)):
            if isinstance(r, torch.Tensor) and not isinstance(o, torch.Tensor):
                checks.add("output_type", False, "output %d is a %s, expected a torch.Tensor" % (i, type(o).__name__), "integrity_violation")
                raise KernelFailure("integrity_violation", "correctness", "")
        checks.add("output_type", True, "")

        if not ref_mutates:
            bad = [i for i, (a, b) in enumerate(zip(tensors_of(cand_in), tensors_of(saved))) if not same_tensor_values(a, b)]
            checks.add("input_mutation", not bad, "candidate modified input(s) %s in place" % bad if bad else "", "integrity_violation")
        if not ref_aliases:
            al = [(j, i) for j, o in enumerate(tensors_of(out)) for i, t in enumerate(tensors_of(cand_in)) if overlaps(o, t)]
            checks.add("output_aliasing", not al, "output/input pairs sharing memory: %s" % al if al else "", "integrity_violation")

        trial_ok = True
        for i, (o, r) in enumerate(zip(outs, refs)):
            if isinstance(r, torch.Tensor):
                ok, name, detail = compare(i, r, o, tol)
                checks.add(name, ok, ("trial %d: " % trial) + detail, "incorrect")
                if ok and name == "allclose":
                    checks.add("relative_norm", True, "")
                trial_ok = trial_ok and ok
            else:
                ok = (o == r) if not isinstance(r, float) else math.isclose(o, r, rel_tol=1e-4, abs_tol=1e-6)
                checks.add("allclose", bool(ok), "trial %d: output %d = %r, expected %r" % (trial, i, o, r), "incorrect")
                trial_ok = trial_ok and bool(ok)
        if not trial_ok:
            # A wrong answer that equals an earlier trial's answer on new
            # inputs is a cached output, not a numerical error.
            for (pr, po) in prev:
                if all(isinstance(a, torch.Tensor) and same_tensor_values(a, b) for a, b in zip(po, tensors_of(out))) and \
                        not all(same_tensor_values(a, b) for a, b in zip(pr, tensors_of(ref_out))):
                    checks.add("memoization", False, "trial %d returned trial-earlier outputs for new inputs (cached across calls)" % trial,
                               "integrity_violation")
                    break
            break
        prev.append(([t.clone() for t in tensors_of(ref_out)], [t.clone() for t in tensors_of(out)]))
        ctx.progress("correctness", trial + 1, trials)
        del out, ref_out, cand_in, ref_in
    res["trials"] = trials

    if checks.failed():
        return

    # Same buffers, new values: a cache keyed on pointer/shape returns stale data.
    ctx.progress("integrity")
    a = make_inputs(seed + 7)
    b = make_inputs(seed + 11)
    ca = clone_tree(a)
    out_a = [t.clone() for t in tensors_of(run_candidate(ca, -1))]
    for dst, src in zip(tensors_of(ca), tensors_of(b)):
        dst.copy_(src)
    out_b = [t.clone() for t in tensors_of(run_candidate(ca, -2))]
    with torch.no_grad():
        rb = tensors_of(ref_model(*clone_tree(b)))
        ra = tensors_of(ref_model(*clone_tree(a)))
    sync()
    memo_ok = True
    detail = "same buffers refilled with new values gave fresh, correct outputs"
    refs_differ = not all(same_tensor_values(x, y) for x, y in zip(ra, rb))
    if refs_differ and all(same_tensor_values(x, y) for x, y in zip(out_a, out_b)):
        memo_ok, detail = False, "refilling the input buffers with new values returned the previous outputs (cached across calls)"
    else:
        for i, (o, r) in enumerate(zip(out_b, rb)):
            ok, _name, d = compare(i, r, o, tol)
            if not ok:
                memo_ok, detail = False, "after refilling the same input buffers: " + d
                break
    checks.add("memoization", memo_ok, detail, "integrity_violation")

    # Reference-op calls.
    mains = main_ops(ref_ops_all)
    called = sorted(o for o in mains if o in cand_ops_all)
    checks.add("reference_ops", not called,
               ("candidate calls the reference's own op(s) %s; implement them in a kernel" % called) if called
               else "reference main ops %s not called" % sorted(mains), "integrity_violation")
    if counter.n == 0:
        warnings.append("no custom kernel ran (no kevolve, Triton, load_inline or cupy launch): the candidate is plain torch ops")
    res["custom_launches"] = counter.n
    res["launch_kinds"] = sorted(counter.kinds)
    res["candidate_ops"] = sorted(k for k in cand_ops_all if k not in TRIVIAL_OPS)[:50]

    # Threads and streams.
    new_threads = [t.name for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    checks.add("threads", not new_threads, ("candidate left threads running: %s" % new_threads) if new_threads else "", "integrity_violation")
    if stream_before is not None:
        same = torch.cuda.current_stream(device) == stream_before
        checks.add("stream", same, "" if same else "candidate changed the current CUDA stream", "integrity_violation")
    patched = [k for k, f in orig_timers.items() if
               {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
                "Event.elapsed_time": torch.cuda.Event.elapsed_time, "cuda.synchronize": torch.cuda.synchronize}[k] is not f]
    checks.add("timers", not patched, ("candidate patched %s" % patched) if patched else "", "integrity_violation")
    if checks.failed() or args.get("skip_timing"):
        return

    # Timing.
    ctx.progress("timing")
    if device.type != "cuda":
        ctx.gate()
    flush = int(args.get("flush_bytes") or (256 << 20 if device.type == "cuda" else 32 << 20))
    timer = Timer(device, flush)
    cap = float(args.get("timing_cap_s") or (3.0 if device.type == "cuda" else 1.5))
    inputs = make_inputs(seed + 99)
    cin = clone_tree(inputs)
    rin = clone_tree(inputs)

    def cand_fn():
        with torch.no_grad():
            cand_model(*cin)

    def ref_fn():
        with torch.no_grad():
            ref_model(*rin)
    try:
        res["candidate"] = timer.bench(cand_fn, cap)
    except BaseException as e:  # noqa: BLE001
        checks.add("run_candidate", False, "during timing: " + _fmt_exc(e), "runtime_error")
        raise KernelFailure("runtime_error", "timing", "")
    res["ref_eager"] = timer.bench(ref_fn, cap)

    if device.type == "cuda":
        check_stream_work(timer, cand_fn, ref_fn, res["candidate"]["median_s"], checks)

    sol = float(args.get("sol_seconds") or 0)
    if sol > 0:
        med = res["candidate"]["median_s"]
        ok = med >= 0.9 * sol
        checks.add("faster_than_sol", ok, "median %.4g s vs speed-of-light %.4g s" % (med, sol), "integrity_violation")
    if checks.failed():
        return

    compile_cap = float(args.get("compile_cap_s") or 90)
    want_compile = args.get("compile_reference")
    if want_compile is None:
        want_compile = device.type == "cuda"
    if want_compile and remaining() > compile_cap + 10:
        ctx.progress("timing_compile")
        try:
            with time_limit(compile_cap):
                cmodel = torch.compile(ref_model)
                with torch.no_grad():
                    cmodel(*rin)
                sync()

            def comp_fn():
                with torch.no_grad():
                    cmodel(*rin)
            res["ref_compile"] = timer.bench(comp_fn, cap)
        except BaseException as e:  # noqa: BLE001
            warnings.append("torch.compile of the reference failed or timed out: %s" % str(e).splitlines()[0][:300] if str(e) else type(e).__name__)
    elif want_compile:
        warnings.append("skipped torch.compile timing of the reference: not enough time left in the budget")

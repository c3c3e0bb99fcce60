"""Shared pieces of the evaluation child: the check list, the failure types
that end an evaluation with a verdict, error formatting, module loading and
small helpers over nested outputs."""
import importlib.util
import os
import re
import sys
import traceback

import torch


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
    """Ends the evaluation with a verdict (the checks say why)."""

    def __init__(self, verdict, stage, detail):
        super().__init__(detail)
        self.verdict, self.stage, self.detail = verdict, stage, detail


class HarnessError(Exception):
    """The request itself is unusable (bad target): a Go error, not a verdict."""


class ReferenceFailure(Exception):
    """The reference, not the candidate, failed: verdict reference_error.
    stage is reference_import, reference_init, reference_inputs or
    reference_forward; message is one line naming the reference's file:line;
    trace at most ~2 KB."""

    def __init__(self, stage, message, trace=""):
        super().__init__(message)
        self.stage, self.message, self.trace = stage, message, trace


# ---------------------------------------------------------------- sides and memory

# KEVOLVE_EVAL_PROFILE=DIR writes a cProfile of each evaluation (and of the
# judge's verify), as text sorted by cumulative time, to DIR/STEM-PID-N.txt:
# where a slow stage spends its time, measured where it runs (a forked
# child on the device, the judge beside it).
PROFILE_ENV = "KEVOLVE_EVAL_PROFILE"
_PROFILES_WRITTEN = [0]


def profiler():
    if not os.environ.get(PROFILE_ENV):
        return None
    import cProfile
    return cProfile.Profile()


def dump_profile(prof, stem):
    if prof is None:
        return
    import io
    import pstats
    _PROFILES_WRITTEN[0] += 1
    try:
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out)
        st.sort_stats("cumulative").print_stats(r"evaluate|workcount|kevolve", 60)
        st.sort_stats("tottime").print_stats(40)
        name = "%s-%d-%d.txt" % (stem, os.getpid(), _PROFILES_WRITTEN[0])
        with open(os.path.join(os.environ[PROFILE_ENV], name), "w") as f:
            f.write(out.getvalue())
    except OSError:
        pass


def peak_allocated(device):
    """The CUDA allocator's peak allocated bytes since its last reset.
    max_memory_allocated() flattens the allocator's whole nested statistics
    (about 150 Python calls) for this one number, dozens of times per
    evaluation; the nested form is read as it comes."""
    try:
        return int(torch.cuda.memory_stats_as_nested_dict(device)["allocated_bytes"]["all"]["peak"])
    except (KeyError, TypeError):  # not initialized yet, or another layout
        return int(torch.cuda.max_memory_allocated(device))


# The status board's size: the Go side reads at most this much (boardSize).
BOARD_SIZE = 64


class Side:
    """Which program is running now: an out-of-memory error anywhere in the
    child is blamed on it. Peak device memory is tracked per side. With a
    board (an fd of a file in the job's judge folder, opened before the
    sandbox, or a path), every change is also written to a
    small shared mapping of that file: when the parent has to kill the child
    (its deadline, its host memory limit), the board says who was running."""

    def __init__(self, device, board=None):
        self.device = device
        self._board = None
        if isinstance(board, int):
            try:
                import mmap
                os.pwrite(board, b"\0" * BOARD_SIZE, 0)
                self._board = mmap.mmap(board, BOARD_SIZE)
            except (OSError, ValueError):
                self._board = None
        elif board:
            try:
                import mmap
                with open(board, "wb+") as f:
                    f.write(b"\0" * BOARD_SIZE)
                    f.flush()
                    self._board = mmap.mmap(f.fileno(), BOARD_SIZE)
            except (OSError, ValueError):
                self._board = None
        self.now = "harness"
        self.oom_side = None
        self.peak = {"reference": None, "candidate": None}
        self.stage = None
        self.stage_peak = {}  # stage -> peak bytes (CUDA allocator; on CPU the process's peak RSS so far)

    @property
    def now(self):
        return self._now

    @now.setter
    def now(self, side):
        self._now = side
        if self._board is not None:
            b = side.encode()[:BOARD_SIZE]
            self._board[:len(b)] = b
            self._board[len(b):BOARD_SIZE] = b"\0" * (BOARD_SIZE - len(b))

    def observe(self):
        """Folds the allocator's peak since its last reset into the current
        stage's peak (called before every reset, and at stage ends)."""
        if self.stage is None:
            return
        try:
            if self.device.type == "cuda":
                p = peak_allocated(self.device)
            else:
                import resource
                p = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
        except Exception:  # noqa: BLE001 - figures are best effort
            return
        if p > self.stage_peak.get(self.stage, 0):
            self.stage_peak[self.stage] = p

    def enter_stage(self, stage):
        """Closes the current stage's peak and starts stage's."""
        if stage == self.stage:
            return
        self.observe()
        self.stage = stage
        if self.device.type == "cuda":
            try:
                torch.cuda.reset_peak_memory_stats(self.device)
            except Exception:  # noqa: BLE001
                pass
        self.observe()

    def run(self, side, fn, *a):
        prev = self.now
        self.now = side
        cuda = self.device.type == "cuda"
        if cuda:
            self.observe()
            torch.cuda.reset_peak_memory_stats(self.device)
        try:
            return fn(*a)
        except BaseException as e:
            # The side is restored below; remember whose memory ran out.
            if is_oom(e) and self.oom_side is None:
                self.oom_side = side
            raise
        finally:
            if cuda:
                p = peak_allocated(self.device)
                if self.peak[side] is None or p > self.peak[side]:
                    self.peak[side] = p
                self.observe()
            self.now = prev

    def memory(self):
        """The result's memory figures. On CPU the per-side peak cannot be
        measured cheaply (tracemalloc is too slow, ru_maxrss is per process):
        the sides are null and the process's peak RSS is given instead."""
        m = {"reference_peak_bytes": self.peak["reference"], "candidate_peak_bytes": self.peak["candidate"]}
        self.observe()
        # Per stage: where the harness's own peak is (CUDA: allocated bytes,
        # the peak of each stage; CPU: the process's peak RSS so far, which
        # only grows, at the end of each stage).
        m["stage_peak_rss_bytes" if self.device.type != "cuda" else "stage_peak_bytes"] = dict(self.stage_peak)
        if self.device.type == "cuda":
            try:
                free, total = torch.cuda.mem_get_info(self.device)
                m["device_total_bytes"] = int(total)
            except Exception:  # noqa: BLE001
                pass
        else:
            try:
                import resource
                m["process_peak_rss_bytes"] = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
            except Exception:  # noqa: BLE001
                pass
        return m


def free_device_bytes(device):
    """Bytes a new allocation can get on device. CUDA: the driver's free
    memory plus what the caching allocator holds unused. CPU: the room left
    under the address-space limit the Go side sets for CPU jobs
    (CPUMemLimit; large tensors are mmapped and unmapped when freed, so the
    address space tracks them), or None when there is no limit."""
    if device.type != "cuda":
        try:
            import resource
            lim = resource.getrlimit(resource.RLIMIT_AS)[0]
            if lim == resource.RLIM_INFINITY or lim <= 0:
                return None
            with open("/proc/self/statm") as f:
                vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            return max(0, int(lim - vm))
        except Exception:  # noqa: BLE001 - no figure: checks run as if room were plenty
            return None
    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def nbytes(x):
    return sum(t.numel() * t.element_size() for t in tensors_of(x))


# The caching allocator's unused blocks go back to the driver when the
# driver has less than this free, or when they are more than a fraction of
# the device.
RELEASE_FREE_BELOW = 8 << 30
RELEASE_CACHED_FRACTION = 8


# What the CUDA runtime raises once a kernel faulted the context.
_CONTEXT_LOST = getattr(torch, "AcceleratorError", RuntimeError)


def release(device, force=False):
    """Frees what the previous stage left: collects cycles and, where memory
    is short (or force), hands the caching allocator's unused blocks back:
    cuBLAS, cuDNN, Triton and the candidate's own allocations outside torch
    need the room too. Where it is not short, the blocks stay: freeing them
    costs a cudaFree now and a cudaMalloc when the next stage allocates
    again, driver calls that run one process at a time across a host's
    GPUs (each evaluation made a dozen such round trips)."""
    import gc
    gc.collect()
    if device.type != "cuda":
        return
    unused = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if unused <= 0:
        return
    try:
        if not force:
            free, total = torch.cuda.mem_get_info(device)
            if free >= RELEASE_FREE_BELOW and unused * RELEASE_CACHED_FRACTION <= total:
                return
        torch.cuda.empty_cache()
    except _CONTEXT_LOST:
        pass  # a context the candidate faulted (a sticky error): its verdict is decided, and the exit frees it all


def is_oom(e):
    if isinstance(e, (MemoryError, torch.OutOfMemoryError)):
        return True
    if not isinstance(e, RuntimeError):
        return False
    # The CPU allocator raises a plain RuntimeError; so do some CUDA paths.
    m = str(e)
    return "out of memory" in m.lower() or "can't allocate memory" in m or "not enough memory" in m


# ---------------------------------------------------------------- errors

_ERROR_LINE = re.compile(r"(\berror\b|\bError\b|undefined reference|ptxas fatal)")


def fmt_exc(e, limit=6000):
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
    if errs and is_compile_exception(e):
        # A build's log is its exception's message: the harness's frames
        # below the loader (two thirds of a compile error's detail, the log
        # repeated in them) say nothing a fix needs; where the candidate
        # called the builder does.
        where = candidate_frames(e)
        if len(msg) <= 1500:
            head = ""  # the whole log follows: its error lines twice would be noise
        s = head + msg[-2000:] + ("\n--- called from ---\n" + where if where else "")
        return s[:limit]
    tb = "".join(traceback.format_exception(e))
    s = head + msg[-2000:] + "\n--- traceback (last frames) ---\n" + tb[-2000:]
    return s[:limit]


def candidate_frames(e, module="kevolve_candidate.py"):
    """The traceback's frames in the candidate's own file, one line each."""
    out = []
    for f in traceback.extract_tb(e.__traceback__):
        if os.path.basename(f.filename) == module:
            out.append("%s:%d in %s: %s" % (module, f.lineno, f.name, (f.line or "").strip()))
    return "\n".join(out[-3:])


def where_in(e, path):
    """'file:line in func' of the deepest frame of e inside the file at path
    (the reference), or of a SyntaxError's own position."""
    if path:
        path = os.path.abspath(path)
    if isinstance(e, SyntaxError) and e.filename:
        return "%s:%s" % (e.filename, e.lineno)
    best = None
    tb = e.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename
        if path and os.path.abspath(f) == path:
            best = "%s:%d in %s" % (f, tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return best


def short_trace(e, limit=2000):
    """The exception and the traceback's last frames, at most limit characters."""
    msg = ("%s: %s" % (type(e).__name__, e))[:600]
    tb = "".join(traceback.format_exception(e))
    room = max(0, limit - len(msg) - 40)
    return (msg + "\n--- traceback (last frames) ---\n" + tb[-room:])[:limit]


def is_compile_exception(e):
    names = {c.__name__ for c in type(e).__mro__}
    if names & {"SyntaxError", "ImportError", "CompileError", "CompilationError",
                "IndentationError", "ModuleNotFoundError"}:
        return True
    msg = str(e)
    return "Error building extension" in msg or "ninja: build stopped" in msg


def load_module(src, name, work_dir):
    """Imports a source ({"code"}, with the "path" it was read from if it
    came from a file) as a fresh module. The code runs from a read-only copy
    in the job folder (Triton and inspect need the source on disk): the bytes
    the server hashed, not a file that may have changed since. A file keeps
    its folder on sys.path and its __file__, for what lies beside it.
    Returns (module, path run)."""
    orig = src.get("path")
    code = src.get("code")
    if code is None and orig:
        with open(orig) as f:
            code = f.read()
    path = os.path.abspath(os.path.join(work_dir, name + ".py"))
    with open(path, "w") as f:
        f.write(code or "")
    os.chmod(path, 0o444)
    for d in (os.path.dirname(path), os.path.dirname(os.path.abspath(orig or path))):
        if d not in sys.path:
            sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    if orig:
        mod.__file__ = os.path.abspath(orig)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod, path


# ---------------------------------------------------------------- nested outputs

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


CHUNK = 1 << 24  # elements per comparison chunk: temporaries stay ~100s of MB


def chunks(t):
    """Flat views of t, CHUNK elements each (a copy only if t is not contiguous)."""
    f = t.reshape(-1)
    for a in range(0, f.numel(), CHUNK):
        yield f[a:a + CHUNK]


def same_tensor_values(a, b):
    """Bitwise equality, NaN equal to NaN, compared in chunks: no whole-tensor
    temporaries on multi-GB outputs."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    floaty = a.is_floating_point() or a.is_complex()
    for x, y in zip(chunks(a), chunks(b)):
        if not floaty:
            if not torch.equal(x, y):
                return False
            continue
        if a.is_complex():
            x, y = torch.view_as_real(x), torch.view_as_real(y)
        nx, ny = torch.isnan(x), torch.isnan(y)
        if not torch.equal(nx, ny):
            return False
        if not torch.equal(x.masked_fill(nx, 0), y.masked_fill(ny, 0)):
            return False
    return True


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


# ---------------------------------------------------------------- patch guard

# torch functions and methods the comparisons and timing rely on: a candidate
# running in this process could replace torch.equal with "return True".
_TORCH_FUNCS = ("equal", "isfinite", "isnan", "where", "maximum", "zeros", "empty_like", "nan_to_num",
                "view_as_real", "allclose")
_TENSOR_METHODS = ("sum", "max", "abs", "argmax", "item", "clone", "copy_", "reshape", "to", "masked_fill",
                   "__sub__", "__mul__", "__add__", "__gt__", "__ne__", "__le__", "__invert__", "__and__",
                   "__getitem__", "__setitem__", "numel", "element_size", "is_contiguous", "view", "tolist")
_HARNESS_MODULES = ("evaluate.main", "evaluate.common", "evaluate.job", "evaluate.state", "evaluate.pipeline",
                    "evaluate.timing", "evaluate.workcount",
                    "evaluate.compare.compare", "evaluate.compare.fastcmp", "evaluate.compare.construct",
                    "evaluate.compare.degenerate", "evaluate.compare.nearconst", "evaluate.compare.inputs_blame",
                    "evaluate.guards.integrity", "evaluate.guards.ops", "evaluate.guards.hooks",
                    "evaluate.guards.fingerprint", "evaluate.guards.tamper", "evaluate.guards.native")
# Packages guarded whole: the check registry and the evaluation's stages.
# Their modules are found at import, so are their names here.
_CHECKS_PACKAGE = "checks"
_HARNESS_PACKAGES = (_CHECKS_PACKAGE, "evaluate.stages")


def guard_snapshot():
    """The identity of every function the checks use: torch's, time's and
    the harness modules' own (functions, classes and their methods). Taken
    before the candidate is imported."""
    import time as _time
    owners = [(torch, n) for n in _TORCH_FUNCS] + [(torch.Tensor, n) for n in _TENSOR_METHODS]
    owners += [(torch.cuda, "synchronize"), (torch.cuda.Event, "record"), (torch.cuda.Event, "elapsed_time"),
               (torch.cuda.Event, "synchronize"), (_time, "perf_counter"), (_time, "perf_counter_ns"), (_time, "monotonic")]
    registered = sorted(n for n in list(sys.modules) if any(n == p or n.startswith(p + ".") for p in _HARNESS_PACKAGES))
    for mname in _HARNESS_MODULES + tuple(registered):
        mod = sys.modules.get(mname)
        if mod is None:
            continue
        for name, v in list(vars(mod).items()):
            if getattr(v, "__module__", None) != mname:
                continue
            if callable(v):
                owners.append((mod, name))
            if isinstance(v, type):
                owners += [(v, k) for k, f in vars(v).items() if callable(f) and not k.startswith("__")]
    return identity_snapshot(owners)


def identity_snapshot(owners):
    """{label: (owner, name, what owner.name is now)} for guard_changed."""
    snap = {}
    for owner, name in owners:
        label = "%s.%s" % (getattr(owner, "__name__", repr(owner)), name)
        snap[label] = (owner, name, getattr(owner, name, None))
    return snap


def guard_changed(snap):
    """Labels of guarded functions that are no longer what they were."""
    return sorted(label for label, (owner, name, f) in snap.items() if getattr(owner, name, None) is not f)

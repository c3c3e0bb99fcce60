"""kevolve warm worker: the parent process.

The parent imports the heavy Python stack once (torch, and triton, cupy and
numpy where importable) and then forks one fresh child per job, so a kernel
that faults, hangs or corrupts its CUDA context dies alone. The parent never
initializes CUDA: a CUDA context does not survive fork. A child whose job
asked for reuse and declared itself clean stays, context and all, for the
next job Go sends it (see "reuse" and "child" below).

Protocol (JSON lines). Requests arrive on stdin; events leave on fd 3 (the
child inherits fd 3 for its own small progress/gate events; each is one
write() under PIPE_BUF bytes, so lines never interleave). The child's fds 1
and 2 go to a log file in the job directory and its return value to
result.json there, so user prints can never corrupt the protocol.

Requests stay small: a job's arguments (a candidate's source may be tens of
MB) are in args_file, which the child reads after the fork, so the parent's
loop never parses them and one big job never delays another's requests.
Lines are split scanning each byte once ("args" inline is still accepted).

  -> {"op":"run","id":N,"module":M,"func":F,"args_file":PATH,"job_dir":D,
      "env":{...},"mem_limit":BYTES,"reuse":B,"child":P}
                                    reuse: the child may serve later jobs;
                                    child: run in idle child P (its last
                                    "done" said idle) instead of a fresh fork
  -> {"op":"grant","id":N}          answer to a child's gate request
  -> {"op":"cancel","id":N}         kill the job's process group (its deadline
                                    passed, perhaps before Go saw "started")
  -> {"op":"ping"}
  <- {"event":"ready", ...versions}
  <- {"event":"started","id":N,"pid":P}
  <- {"event":"progress","id":N,"stage":S,"done":D,"total":T}   (child)
  <- {"event":"gate","id":N}                                    (child)
  <- {"event":"ungate","id":N}   (child) done with the device: the next job's
                                 device phase may start while this child
                                 writes its result and tears its context down
  <- {"event":"done","id":N,"pid":P,"idle":B}  (child) result.json is complete;
                                 the exit (CUDA teardown: 0.1-0.2 s) still
                                 follows, or, with idle, the child waits on
                                 its grant pipe for another job (reuse)
  <- {"event":"exit","id":N,"pid":P,"code":C,"signal":S}
  <- {"event":"error","id":N,"message":M}
"""
import gc
import importlib
import json
import os
import selectors
import signal
import sys
import time
import traceback
import warnings

OUT_FD = 3
PIPE_BUF = 4000
# Requests are small (arguments travel in files); a longer line is garbage.
MAX_LINE = 64 << 20

versions = {"python": sys.version.split()[0], "pid": os.getpid()}
# torch.cuda.is_available() through NVML does not initialize the driver, so a
# stray call during an import cannot poison the children.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
_t0 = time.monotonic()
try:
    import numpy  # noqa: F401
    versions["numpy"] = numpy.__version__
except Exception:  # noqa: BLE001 - optional
    pass
try:
    import torch
    versions["torch"] = torch.__version__
    versions["torch_cuda"] = torch.version.cuda or ""
except Exception as e:  # noqa: BLE001 - jobs that need torch report it
    versions["torch_error"] = repr(e)
# Triton decides interpreter-or-compiler for its own library when imported:
# with no NVIDIA device node the only Triton that can run is the interpreter.
if not os.path.exists("/dev/nvidiactl") and "TRITON_INTERPRET" not in os.environ:
    os.environ["TRITON_INTERPRET"] = "1"
for _name in ("triton", "cupy"):
    try:
        _m = importlib.import_module(_name)
        versions[_name] = getattr(_m, "__version__", "?")
        if _name == "triton":
            _m._kevolve_interpret_at_import = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")
    except Exception:  # noqa: BLE001 - optional
        pass


def _libcuda_mapped():
    try:
        with open("/proc/self/maps") as f:
            return "libcuda.so" in f.read()
    except OSError:
        return False


def _import_all(names):
    for n in names:
        importlib.import_module(n)


def _driver_initialized():
    """True if cuInit has run in this process. cuDeviceGetCount answers
    CUDA_ERROR_NOT_INITIALIZED (3) before cuInit and does not initialize."""
    import ctypes
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    n = ctypes.c_int(0)
    return lib.cuDeviceGetCount(ctypes.byref(n)) != 3


def _imports_leave_cuda_alone(names):
    """Imports names in a throwaway forked child and says whether that left
    the CUDA driver uninitialized. A parent that initialized CUDA forks
    children that cannot use it."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _import_all(names)
            t = sys.modules.get("torch")
            if not _driver_initialized() and not (t is not None and t.cuda.is_initialized()):
                code = 0
        except BaseException:  # noqa: BLE001
            code = 2
        os._exit(code)
    _, st = os.waitpid(pid, 0)
    return os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0


# torch.compile (the reference's compiled timing) needs dynamo and inductor,
# and load_inline needs cpp_extension (setuptools): about 3 s of imports that
# every child would otherwise pay. On CPU-only machines they are preloaded.
# On GPU machines only on request (KEVOLVE_WORKER_PRELOAD=1) and only if a
# throwaway child shows the imports leave the CUDA driver uninitialized: an
# earlier version that preloaded them unconditionally broke CUDA in every
# child on the H100 box.
_EXTRA = ["torch._dynamo", "torch._inductor", "torch.utils.cpp_extension"]
if "torch" in versions and os.environ.get("KEVOLVE_WORKER_NO_DYNAMO") != "1":
    _gpu = os.path.exists("/dev/nvidiactl")
    try:
        if not _gpu:
            _import_all(_EXTRA)
            versions["preloaded"] = _EXTRA
        elif os.environ.get("KEVOLVE_WORKER_PRELOAD") == "1" and _imports_leave_cuda_alone(_EXTRA):
            _import_all(_EXTRA)
            versions["preloaded"] = _EXTRA
        elif _imports_leave_cuda_alone(_EXTRA[2:]):
            _import_all(_EXTRA[2:])
            versions["preloaded"] = _EXTRA[2:]
        else:
            versions["preloaded"] = []
    except Exception as e:  # noqa: BLE001
        versions["dynamo_error"] = repr(e)
versions["libcuda_mapped"] = _libcuda_mapped()
# Pre-import the job modules so children fork with them loaded.
for _name in ("kevolve", "evaluate"):
    try:
        importlib.import_module(_name)
    except Exception as e:  # noqa: BLE001
        versions[_name + "_error"] = repr(e)
versions["import_s"] = round(time.monotonic() - _t0, 3)
# Everything imported so far lives as long as the parent: moved out of the
# collector's reach, a child's gc.collect() scans only what the child made.
# Unfrozen, each collection in a child walked the ~250k objects of torch
# and triton (0.1 s on the H100 box, four times per evaluation) and wrote
# their headers, copying the parent's pages the fork had shared.
gc.freeze()
versions["gc_frozen"] = gc.get_freeze_count()


def emit(obj):
    line = (json.dumps(obj) + "\n").encode()
    try:
        os.write(OUT_FD, line)
    except BrokenPipeError:
        os._exit(0)  # Go is gone


def child_emit(obj):
    """One atomic write of a small event line (from the child)."""
    line = json.dumps(obj)
    if len(line) > PIPE_BUF:
        return
    os.write(OUT_FD, (line + "\n").encode())


class ChildContext:
    """What a job function gets: progress events and the device gate."""

    def __init__(self, job_id, grant_fd, job_dir, reuse=False, job_index=1):
        self.job_id = job_id
        self._grant_fd = grant_fd
        self.job_dir = job_dir
        self.gated = False
        self.ungated = False
        # reuse: Go would hand this child another job; the job function sets
        # reusable when it left nothing behind that could affect that job.
        self.reuse = reuse
        self.reusable = False
        self.job_index = job_index  # 1 for a fresh child

    # ---- sandbox interface (minimal stand-in; the sandbox's real versions
    # replace this block): work_dir is the candidate's writable folder,
    # judge_dir the judge's (made before the sandbox, read-only inside it);
    # enter_sandbox() applies the sandbox and says which layers it set.
    def make_dirs(self):
        self.work_dir = os.path.join(self.job_dir, "work")
        self.judge_dir = os.path.join(self.job_dir, "judge")
        for d in (self.work_dir, self.judge_dir):
            os.makedirs(d, exist_ok=True)

    def enter_sandbox(self):
        return {}
    # ---- end of the sandbox interface

    def progress(self, stage, done=0, total=0):
        child_emit({"event": "progress", "id": self.job_id, "stage": str(stage)[:200],
                    "done": int(done), "total": int(total)})

    def gate(self):
        """Block until the Go side grants this job the device (a semaphore)."""
        if self.gated:
            return
        child_emit({"event": "gate", "id": self.job_id})
        while True:
            b = os.read(self._grant_fd, 1)
            if b:
                break
            # The parent closed the pipe without granting: it died.
            os._exit(70)
        self.gated = True

    def ungate(self):
        """Hands the device back before the child exits. Only a job that has
        finished with the device and freed what it held there may call it."""
        if self.gated and not self.ungated:
            self.ungated = True
            child_emit({"event": "ungate", "id": self.job_id})


def _set_pdeathsig():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort (non-Linux)
        pass


def _read_line(fd):
    """One request line from the grant pipe ("" when the parent closed it)."""
    buf = bytearray()
    while True:
        b = os.read(fd, 1)
        if not b:
            return ""
        if b == b"\n":
            return buf.decode()
        buf += b


def run_child(req, grant_r):
    """Runs in the forked child; never returns. After a job that asked for
    reuse and left the child clean ("done" with idle), the child waits on
    its grant pipe for the next job line (sent for the same device and
    environment), keeping its CUDA context; otherwise it exits. The
    address-space limit (CPU jobs) is set once, when the child starts."""
    try:
        os.setpgid(0, 0)
        _set_pdeathsig()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.close(null_fd)
        mem = int(req.get("mem_limit") or 0)
        if mem > 0:
            import resource
            vm = 0
            with open("/proc/self/statm") as f:
                vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            lim = vm + mem
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    except BaseException:  # noqa: BLE001
        os._exit(1)
    index = 1
    while True:
        code, again = _run_job(req, grant_r, index)
        if code != 0 or not again:
            os._exit(code)
        line = _read_line(grant_r)
        try:
            req = json.loads(line) if line else None
        except ValueError:
            req = None
        if req is None:
            os._exit(0)
        index += 1


def _run_job(req, grant_r, index):
    """Runs one job in this child; returns (exit code, may serve another)."""
    code = 1
    ctx = None
    try:
        job_dir = req["job_dir"]
        log_fd = os.open(os.path.join(job_dir, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        if index > 1:
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        if index == 1:
            sys.stdout = os.fdopen(1, "w", buffering=1)
            sys.stderr = os.fdopen(2, "w", buffering=1)
        for k, v in (req.get("env") or {}).items():
            os.environ[str(k)] = str(v)
        ctx = ChildContext(req["id"], grant_r, job_dir, bool(req.get("reuse")), index)
        args = req.get("args")
        if req.get("args_file"):
            with open(req["args_file"], "rb") as f:
                args = json.load(f)
        mod = importlib.import_module(req["module"])
        fn = getattr(mod, req["func"])
        ctx.make_dirs()
        if not getattr(mod, "SANDBOX_SELF", False):  # a job that forks trusted helpers first enters it itself
            ctx.enter_sandbox()
        try:
            result = fn(args or {}, ctx)
        except MemoryError:
            result = {"error": "MemoryError: the job exceeded its memory limit",
                      "error_type": "MemoryError"}
        except BaseException as e:  # noqa: BLE001 - report everything
            ctx.reusable = False
            result = {"error": "".join(traceback.format_exception(e))[-20000:],
                      "error_type": type(e).__name__}
        tmp = os.path.join(job_dir, "result.json.tmp")
        with open(tmp, "w") as f:
            json.dump(result, f, default=str)
        os.replace(tmp, os.path.join(job_dir, "result.json"))
        code = 0
    except BaseException:  # noqa: BLE001
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        code = code or 1
    again = bool(code == 0 and ctx is not None and ctx.reuse and ctx.reusable)
    if code == 0:
        # Go returns on this, not on the exit, which waits for the driver
        # to tear the CUDA context down; idle says the child stays for
        # another job instead (run_child waits for it).
        child_emit({"event": "done", "id": req["id"], "pid": os.getpid(), "idle": again})
    # A child that is not kept leaves through os._exit: it never runs the
    # parent's atexit handlers, and does not wait for threads a candidate
    # may have left running (such a job is never reusable).
    return code, again


def handle(line, children, by_id):
    """Acts on one request line."""
    try:
        req = json.loads(line)
    except ValueError as e:
        emit({"event": "error", "id": None, "message": "bad json: %s" % e})
        return
    op = req.get("op")
    if op == "ping":
        emit({"event": "pong"})
    elif op == "grant":
        pid = by_id.get(req.get("id"))
        if pid is not None:
            try:
                os.write(children[pid][1], b"g")
            except OSError:
                pass
    elif op == "cancel":
        # The child's group exists from the fork on (setpgid below), so this
        # kill reaches it and anything it started, however early it comes.
        pid = by_id.get(req.get("id"))
        if pid is not None:
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
    elif op == "run":
        pid = req.get("child")
        if pid in children:
            # An idle child Go chose for this job: the request line goes down
            # its grant pipe. If it died meanwhile, a fresh child runs the job.
            try:
                os.write(children[pid][1], (json.dumps(req) + "\n").encode())
            except OSError:
                pass
            else:
                by_id.pop(children[pid][0], None)
                children[pid] = (req.get("id"), children[pid][1])
                by_id[req.get("id")] = pid
                emit({"event": "started", "id": req.get("id"), "pid": pid, "reused": True})
                return
        try:
            grant_r, grant_w = os.pipe()
            pid = os.fork()
        except OSError as e:
            emit({"event": "error", "id": req.get("id"), "message": "fork: %s" % e})
            return
        if pid == 0:
            os.close(grant_w)
            run_child(req, grant_r)
        os.close(grant_r)
        try:
            os.setpgid(pid, pid)  # also done by the child; whoever is first wins
        except OSError:
            pass
        children[pid] = (req.get("id"), grant_w)
        by_id[req.get("id")] = pid
        emit({"event": "started", "id": req.get("id"), "pid": pid})
    else:
        emit({"event": "error", "id": req.get("id"), "message": "unknown op %r" % op})


def main():
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    # Forked children keep fd 3; programs they exec (gcc, nvcc, a shell)
    # must not, or a lingering grandchild would hold the event pipe open.
    os.set_inheritable(OUT_FD, False)
    # A write to a child that died must fail (EPIPE), not kill the parent;
    # a write to Go that is gone ends the parent (emit).
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sel = selectors.DefaultSelector()
    os.set_blocking(0, False)
    sel.register(0, selectors.EVENT_READ)
    buf = bytearray()
    scanned = 0  # bytes of buf already searched for a newline
    children = {}  # pid -> (id, grant_w)
    by_id = {}  # id -> pid
    emit({"event": "ready", **versions})
    eof = False
    while not eof or children:
        for _key, _ in sel.select(timeout=0.02 if children else 0.5):
            try:
                data = os.read(0, 1 << 20)
            except BlockingIOError:
                continue
            if not data:
                eof = True
                sel.unregister(0)
                break
            buf += data
        start = 0
        while True:
            nl = buf.find(b"\n", max(scanned, start))
            if nl < 0:
                scanned = len(buf)
                break
            line = bytes(buf[start:nl])
            start = nl + 1
            if line.strip():
                handle(line, children, by_id)
        if start:
            del buf[:start]
            scanned -= start
        if len(buf) > MAX_LINE:
            emit({"event": "error", "id": None, "message": "request line over %d bytes dropped" % MAX_LINE})
            buf = bytearray()
            scanned = 0
        # Reap finished children.
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            job_id, grant_w = children.pop(pid, (None, None))
            if grant_w is not None:
                os.close(grant_w)
            by_id.pop(job_id, None)
            ev = {"event": "exit", "id": job_id, "pid": pid, "code": None, "signal": None}
            if os.WIFSIGNALED(status):
                ev["signal"] = os.WTERMSIG(status)
            else:
                ev["code"] = os.WEXITSTATUS(status)
            emit(ev)


if __name__ == "__main__":
    main()

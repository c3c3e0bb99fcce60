"""kevolve warm worker: the parent process.

The parent imports the heavy Python stack once (torch, and triton, cupy and
numpy where importable) and then forks one fresh child per job, so a kernel
that faults, hangs or corrupts its CUDA context dies alone. The parent never
initializes CUDA: a CUDA context does not survive fork. A child whose job
asked for reuse and declared itself clean stays, context and all, for the
next job Go sends it (see "reuse" and "child" below).

Job folders and the sandbox. A job's folder (job_dir, made by Go) holds
work/ (the candidate's cwd, HOME and TMPDIR, its private caches: the only
place it may write) and judge/ (args.json, and the log, result, board and
sandbox report, opened here before the sandbox and written through those
fds). Before the job function runs, the child enters the sandbox
(sandbox/layers.py: network namespace, uid, capabilities, no_new_privs, Landlock,
seccomp), unless the job's module sets SANDBOX_SELF = True and calls
ctx.enter_sandbox() itself (after forking what must stay outside it). The
parent and each child are subreapers: what a job starts is killed when it
ends (kill_descendants, and the parent's sweep of orphans). Where the host
lets it, the job's process is in a cgroup of its own (sandbox/cgroup.py: pids.max,
the job's memory limit counting its tmpfs); when the parent reaps a child
it kills whatever is left in the child's cgroup and removes it.

Protocol (JSON lines). Requests arrive on stdin; events leave on fd 3 (the
child inherits fd 3 for its own small progress/gate events; each is one
write() under PIPE_BUF bytes, so lines never interleave). The child's fds 1
and 2 go to judge/log.txt and its return value to judge/result.json, so
user prints can never corrupt the protocol.

Requests stay small: a job's arguments (a candidate's source may be tens of
MB) are in args_file, which the child reads after the fork, so the parent's
loop never parses them and one big job never delays another's requests.
Lines are split scanning each byte once ("args" inline is still accepted).

  -> {"op":"run","id":N,"module":M,"func":F,"args_file":PATH,"job_dir":D,
      "env":{...},"mem_limit":BYTES,"reuse":B,"child":P,
      "network":B,"writable":[PATH...]}
                                    reuse: the child may serve later jobs;
                                    child: run in idle child P (its last
                                    "done" said idle) instead of a fresh fork;
                                    network: no network namespace;
                                    writable: the sandbox may write these too
  -> {"op":"grant","id":N}          answer to a child's gate request
  -> {"op":"cancel","id":N}         kill the job's process group (its deadline
                                    passed, perhaps before Go saw "started")
  -> {"op":"ping"}
  <- {"event":"ready", ...versions}
  <- {"event":"started","id":N,"pid":P}
  <- {"event":"progress","id":N,"stage":S,"done":D,"total":T[,"figures":{...}]}   (child)
  <- {"event":"gate","id":N}                                    (child)
  <- {"event":"ungate","id":N}   (child) done with the device: the next job's
                                 device phase may start while this child
                                 writes its result and tears its context down
  <- {"event":"done","id":N,"pid":P,"idle":B[,"cgroup":{...}]}  (child) result.json is complete;
                                 the exit (CUDA teardown: 0.1-0.2 s) still
                                 follows, or, with idle, the child waits on
                                 its grant pipe for another job (reuse)
  <- {"event":"exit","id":N,"pid":P,"code":C,"signal":S[,"cgroup":{...}]}
                                 cgroup: what the job's cgroup counted
                                 (cgroup.counters: forks refused, OOM
                                 kills), read by the parent before it
                                 removed it; in "done", the child's own
                                 reading for that job
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
for _name in ("kevolve", "evaluate.main"):
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
    """What a job function gets: progress events, the device gate, its
    folders (work_dir: the candidate's cwd, home and temp, writable in the
    sandbox; judge_dir: the harness's files, not writable there) and the
    sandbox (enter_sandbox)."""

    def __init__(self, job_id, grant_fd, job_dir, reuse=False, job_index=1, files=None, network=False):
        self.job_id = job_id
        self._grant_fd = grant_fd
        self.job_dir = job_dir
        self.work_dir = os.path.join(job_dir, "work")
        self.judge_dir = os.path.join(job_dir, "judge")
        # The status board's fd, opened before the sandbox (evaluate's Side maps it).
        self.board = (files or {}).get("board")
        self._files = files or {}
        self._network = network
        self._writable = list((files or {}).get("writable") or ())
        self.gated = False  # holds the device's exclusive phase now
        # reuse: Go would hand this child another job; the job function sets
        # reusable when it left nothing behind that could affect that job.
        self.reuse = reuse
        self.reusable = False
        self.job_index = job_index  # 1 for a fresh child

    def enter_sandbox(self, extra_write=(), builder=False):
        """Enters the sandbox (sandbox/layers.py) once per child and returns its
        report; later calls return the same report. The report is written
        to judge/sandbox.json through an fd opened before, for Go, and that
        fd is closed then: no code of the candidate's holds it."""
        global _SANDBOX
        if _SANDBOX is None:
            _SANDBOX = _enter_sandbox(self.work_dir, self._writable + list(extra_write), self._network, builder, self._writable)
            fd = self._files.pop("sandbox", None)
            if fd is not None:
                _write_fd(fd, json.dumps(_SANDBOX).encode())
                os.close(fd)
                for fds in _FILES.values():
                    fds.pop("sandbox", None)
        return _SANDBOX

    def progress(self, stage, done=0, total=0, figures=None):
        """A progress event; figures (a small dict) are partial results Go
        keeps for a job its deadline ends. An event too long for one
        atomic write goes without them."""
        ev = {"event": "progress", "id": self.job_id, "stage": str(stage)[:200], "done": int(done), "total": int(total)}
        if figures:
            line = json.dumps(dict(ev, figures=figures))
            if len(line) <= PIPE_BUF:
                ev["figures"] = figures
        child_emit(ev)

    def gate(self):
        """Block until the Go side grants this job the device (a semaphore).
        A job that handed it back (ungate) may ask again: it queues anew."""
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
        """Hands the device back: before the child exits, or while it works
        on the host. Only a job with nothing of its own still running on
        the device may call it."""
        if self.gated:
            self.gated = False
            child_emit({"event": "ungate", "id": self.job_id})


def _set_pdeathsig():
    try:
        from sandbox import layers as sandbox
        sandbox.set_pdeathsig()
    except Exception:  # noqa: BLE001 - best effort (non-Linux)
        pass


def _set_subreaper():
    """Orphans below this process come back to it, not to init: a job's
    setsid or double-forked processes stay where they can be found."""
    try:
        from sandbox import layers as sandbox
        sandbox.set_subreaper()
    except Exception:  # noqa: BLE001 - best effort (non-Linux)
        pass


def _sweep_orphans(children):
    """Kills processes reparented to the parent (it is their subreaper)
    that are not its job children: what a job left behind when its child
    died. Their own children come back here in turn, for the next sweep."""
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for n in names:
        if not n.isdigit() or int(n) in children:
            continue
        try:
            with open("/proc/%s/stat" % n, "rb") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            try:
                os.kill(int(n), signal.SIGKILL)
            except OSError:
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
        _set_subreaper()
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
    try:
        _enter_view(req)
        if req.get("module") == "evaluate.main":
            # The judge reads the job's environment as the job does (its
            # device pinning, its shape set): set before it is forked.
            for k, v in (req.get("env") or {}).items():
                os.environ[str(k)] = str(v)
            from evaluate.judge import client as evaluate_judge_client
            evaluate_judge_client.spawn_early()
        _enter_pidns(req)
    except BaseException:  # noqa: BLE001 - never back into the parent's loop
        traceback.print_exc()
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


# The sandbox's report once this child entered it (ChildContext.enter_sandbox).
_SANDBOX = None
# The child's mount namespace (jail.enter_view): (ok, detail), None before.
_VIEW = None
# The PID namespace the job's process was forked into (jail.fork_jailed):
# (ok, detail), None before.
_PIDNS = None
# The job's cgroup (sandbox/cgroup.py), joined by the job's process: its handle
# (None without one) and (ok, detail) for the sandbox's report.
_CGROUP = None
_CGROUP_REPORT = None


# Why a GPU job may run without the PID namespace and the uid drop: where
# CUDA tensors cross between the judge and the job's process by torch's
# IPC handles (wire.CUDA_SHARING "ipc": ROCm, or an NVIDIA driver that
# cannot export memory as a descriptor), the exchange failed across a uid
# (cudaErrorMapBufferObjectFailed, H100 and H200) and, on the H100, across
# the PID namespace. Such a job gets what stands in for them: its cgroup
# holds every process it starts (membership no clone(CLONE_PARENT) or
# setsid leaves, freeze and kill by cgroup), and the read-only host,
# Landlock and an empty capability set keep a candidate that has the
# server's uid from writing outside its folders. Where memory crosses by
# descriptor ("vmm", evaluate/judge/vmm.py) a GPU job's jail is a CPU job's.
GPU_JAIL_GAP = ("a GPU job whose memory crosses to the judge by torch's IPC (%s), which fails across it "
                "(cudaErrorMapBufferObjectFailed)")


# Whether this child's jobs run in the shared-uid jail above (set by
# _ipc_jail at its first job).
_IPC_JAIL = False
# Why this host's GPU jobs share CUDA memory by torch's IPC (how they share
# it is wire.CUDA_SHARING), set once by _gpu_sharing before any fork.
_IPC_WHY = ""


def _ipc_jail(req):
    """Whether the job runs in the shared-uid jail: pinned to a GPU (its
    lease names one) whose memory crosses by torch's IPC, or asking for
    that jail on any host (KEVOLVE_JAIL=ipc, in the worker's environment
    or the job's: how a host without such a GPU tests it)."""
    global _IPC_JAIL
    from evaluate.judge import wire
    env = req.get("env") or {}
    if str(env.get("KEVOLVE_JAIL", os.environ.get("KEVOLVE_JAIL", ""))) == "ipc":
        _IPC_JAIL = True
    for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        v = str(env.get(k, "")).strip()
        if v and v != "-1" and wire.CUDA_SHARING == "ipc":
            _IPC_JAIL = True
    return _IPC_JAIL


def _gap_why():
    return GPU_JAIL_GAP % (_IPC_WHY or "asked for by KEVOLVE_JAIL=ipc")


def _enter_pidns(req):
    """Forks the process that runs this child's jobs as pid 1 of a PID
    namespace of its own and waits for it, ending as it ended: the Go side
    and the parent keep addressing this process, and killing it kills the
    jail (PDEATHSIG, then the kernel's end of the namespace). Where the host
    refuses the namespace, this process runs the jobs itself."""
    global _PIDNS
    if _sandbox_off(req):
        return
    from sandbox import cgroup
    from sandbox import jail
    # The job's cgroup, made while this process is root; the judge, forked
    # before, stays outside it.
    cg, cg_why = cgroup.make(os.getpid(), int(req.get("mem_limit") or 0))
    if _ipc_jail(req):
        _PIDNS = (False, _gap_why())
        _join_cgroup(cg, cg_why)  # no namespace: this process runs the jobs
        return
    pid, why = jail.fork_jailed()
    if pid is None:
        _PIDNS = (False, why)
        _join_cgroup(cg, cg_why)
        return
    if pid == 0:
        # First, before it starts anything: all it starts is born in it.
        _join_cgroup(cg, cg_why)
        ok, proc = jail.enter_own_proc()
        _PIDNS = (ok, why + "; " + proc)
        _set_pdeathsig()
        _set_subreaper()  # not inherited; as the namespace's init it reaps orphans anyway
        return
    jail.keep(pid)  # this process may start no thread now, and only waits


def _join_cgroup(cg, why):
    """Moves this process (the job's) into its cgroup (cgroup.make's
    handle, None where none was made, and why)."""
    global _CGROUP, _CGROUP_REPORT
    if cg is None:
        _CGROUP_REPORT = (False, why)
        return
    from sandbox import cgroup
    ok, detail = cgroup.join(cg)
    _CGROUP = cg if ok else None
    _CGROUP_REPORT = (ok, detail)


def _sandbox_off(req=None):
    """KEVOLVE_SANDBOX=0, in the worker's environment or the job's."""
    env = (req or {}).get("env") or {}
    return str(env.get("KEVOLVE_SANDBOX", os.environ.get("KEVOLVE_SANDBOX"))) == "0"


def _enter_view(req):
    """The job's view of the filesystem (jail.enter_view), entered once per
    child, while it is root and single-threaded and before its judge is
    forked: everything the child runs from now on sees it."""
    global _VIEW
    if _sandbox_off(req):
        return
    _ipc_jail(req)
    try:
        from sandbox import jail
        job_dir = req["job_dir"]
        writable = [job_dir] + [p for p in (req.get("writable") or ()) if p] + _profile_dirs()
        size = jail.scratch_bytes(int(req.get("mem_limit") or 0))
        _VIEW = jail.enter_view(jail.default_needs([os.path.dirname(os.path.abspath(__file__))]), writable, size, size)
    except BaseException as e:  # noqa: BLE001 - reported with the sandbox, never fatal
        _VIEW = (False, "the job's view failed: %r" % (e,))


# The job folder's harness files, opened before the sandbox: job_dir -> fds,
# and each fd's (device, inode) when it was opened.
_FILES = {}
_FILE_IDS = {}
# What Go reads: the candidate's output, the result, the board, the report.
_JUDGE_FILES = (("log", "log.txt", os.O_APPEND), ("result", "result.json", 0),
                ("board", "board", 0), ("sandbox", "sandbox.json", 0))
BOARD_SIZE = 64


def _profile_dirs():
    """The operator's profile dumps (evaluate/main.py's KEVOLVE_EVAL_PROFILE): a
    folder every job may write, when it is set."""
    prof = os.environ.get("KEVOLVE_EVAL_PROFILE")
    return [prof] if prof and os.path.isdir(prof) else []


def _enter_sandbox(work_dir, extra_write, network, builder=False, job_write=()):
    if _sandbox_off():
        return {"active": [], "missing": {"all": "disabled by KEVOLVE_SANDBOX=0"}, "detail": {}}
    try:
        from sandbox import layers as sandbox
        need = [sys.executable, sys.prefix, os.path.dirname(os.path.abspath(__file__))]
        extra_write = list(extra_write) + _profile_dirs()
        view = _VIEW or (False, "the worker entered no view")
        pidns = _PIDNS or (False, "the worker forked no PID namespace")
        cg = _CGROUP_REPORT or (False, "the worker made no cgroup")
        keep_uid = _gap_why() if _IPC_JAIL else ""
        return sandbox.enter(work_dir, need_reachable=need, extra_write=extra_write, network=network, view=view, pidns=pidns,
                             builder=builder, job_write=list(job_write) + _profile_dirs(),
                             keep_uid=keep_uid, cgroup=cg)
    except BaseException as e:  # noqa: BLE001 - report, never fail the job for it
        return {"active": [], "missing": {"all": "sandbox failed: %r" % (e,)}, "detail": {}}


def _write_fd(fd, data):
    # The fd must still be the file opened before the sandbox: code in the
    # child could have dup2'd its own file over it, sending the harness's
    # result there while the judge's file keeps a forged one. Such a child
    # reports nothing, and Go takes the file as forged.
    st = os.fstat(fd)
    if _FILE_IDS.get(fd) != (st.st_dev, st.st_ino):
        raise OSError("the harness's file descriptor %d was replaced" % fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _job_files(job_dir):
    """The fds of the job's harness files in judge/, opened once per job
    folder (a kept child keeps its folder, and its fds, for every job: the
    sandbox no longer lets it open them). A kept child's files are emptied
    by Go before it sends the next job."""
    if job_dir in _FILES:
        return _FILES[job_dir]
    judge = os.path.join(job_dir, "judge")
    fds = {}
    for key, name, flag in _JUDGE_FILES:
        fd = os.open(os.path.join(judge, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | flag, 0o644)
        fds[key] = fd
        st = os.fstat(fd)
        _FILE_IDS[fd] = (st.st_dev, st.st_ino)
    if os.fstat(fds["board"]).st_size < BOARD_SIZE:
        os.ftruncate(fds["board"], BOARD_SIZE)
    _FILES.clear()
    _FILES[job_dir] = fds
    return fds


def _job_env(work_dir):
    """cwd, home, temp and private build caches under work/."""
    import tempfile
    os.makedirs(work_dir, exist_ok=True)
    os.chdir(work_dir)
    try:
        from sandbox import layers as sandbox
        env = sandbox.private_env(work_dir)
    except OSError:
        env = {}
    os.environ.update(env)
    tempfile.tempdir = env.get("TMPDIR") or tempfile.tempdir


def kill_descendants(spare=()):
    """Kills every process this child started (it is their subreaper, so
    setsid and double-forked ones are found too) and reaps them, but the
    harness's own helpers in spare (the judge a kept child keeps: Go checks
    that it is the pid the judge itself declared). Returns how many there
    were."""
    from sandbox import jail, proctree
    n = 0
    spare = set(spare)
    me = jail.host_pid()  # the host's /proc, which names this process so
    for _ in range(10):
        pids = [p for p in proctree.descendants(me) if p not in spare]
        if not pids:
            break
        n += len(pids)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for _ in range(400):  # up to ~2 s for a process stuck in the kernel
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.005)
                if not [p for p in proctree.descendants(me) if p not in spare]:
                    break
    return n


def _sweep_jail(helpers):
    """Kills every process the job started and empties its private /tmp
    and /dev/shm; returns how many processes there were (0: none). In the
    job's own PID namespace that is every process of it, wherever its
    parent link points (kill(-1) from its init); without one, this
    process's descendants (it is their subreaper) and whatever else is in
    its cgroup, helpers spared."""
    from sandbox import jail
    swept = jail.sweep()
    n = kill_descendants(helpers) if swept is None else int(swept)
    if swept is None and _CGROUP is not None:
        from sandbox import cgroup
        n += cgroup.kill(_CGROUP, spare={os.getpid()} | set(helpers))
    if _VIEW and _VIEW[0]:
        jail.empty_scratch()
    return n


def _call_job(req, ctx, args):
    mod = importlib.import_module(req["module"])
    fn = getattr(mod, req["func"])
    if not getattr(mod, "SANDBOX_SELF", False):
        ctx.enter_sandbox(builder=bool(getattr(mod, "SANDBOX_BUILDER", False)))
    try:
        return fn(args or {}, ctx)
    except MemoryError:
        return {"error": "MemoryError: the job exceeded its memory limit", "error_type": "MemoryError"}
    except BaseException as e:  # noqa: BLE001 - report everything
        ctx.reusable = False
        return {"error": "".join(traceback.format_exception(e))[-20000:], "error_type": type(e).__name__}


def _run_job(req, grant_r, index):
    """Runs one job in this child; returns (exit code, may serve another)."""
    code = 1
    ctx = None
    from sandbox import cgroup
    counted = cgroup.counters(_CGROUP)  # a kept child's cgroup counted its earlier jobs too
    try:
        job_dir = req["job_dir"]
        files = _job_files(job_dir)
        if index > 1:
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(files["log"], 1)
        os.dup2(files["log"], 2)
        if index == 1:
            sys.stdout = os.fdopen(1, "w", buffering=1)
            sys.stderr = os.fdopen(2, "w", buffering=1)
        for k, v in (req.get("env") or {}).items():
            os.environ[str(k)] = str(v)
        ctx = ChildContext(req["id"], grant_r, job_dir, bool(req.get("reuse")), index,
                           dict(files, writable=req.get("writable")), bool(req.get("network")))
        _job_env(ctx.work_dir)
        args = req.get("args")
        if req.get("args_file"):
            with open(req["args_file"], "rb") as f:
                args = json.load(f)
        result = _call_job(req, ctx, args)
        _write_fd(files["result"], json.dumps(result, default=str).encode())
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
    # Nothing the job started outlives it, wherever its parent link points
    # (in the jail, kill(-1) from the namespace's init reaches all of it); a
    # child that had to kill something is not kept.
    left = _sweep_jail(getattr(ctx, "helper_pids", ()))
    again = bool(code == 0 and ctx is not None and ctx.reuse and ctx.reusable and not left)
    if code == 0:
        # Go returns on this, not on the exit, which waits for the driver
        # to tear the CUDA context down; idle says the child stays for
        # another job instead (run_child waits for it).
        from sandbox import jail
        ev = {"event": "done", "id": req["id"], "pid": jail.host_pid(), "idle": again}
        if _CGROUP is not None:
            ev["cgroup"] = cgroup.since(_CGROUP, counted)  # the job process's word; the parent's "exit" has its own
        child_emit(ev)
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


def _cgroup_prepare():
    """Finds where jobs' cgroups go (inherited by every child) and removes
    those a crashed worker left; returns how many."""
    try:
        from sandbox import cgroup
        return cgroup.prepare()
    except Exception:  # noqa: BLE001 - a host without cgroups runs jobs as before
        return 0


def _release_cgroup(pid, pending):
    """The reaped child pid's cgroup: what it counted (for the "exit"
    event), then whatever is left in it killed and the folder removed; one
    whose killed processes have not left yet goes to pending. None when the
    child had none."""
    try:
        from sandbox import cgroup
        cg = cgroup.handle(pid)
        use, gone = cgroup.release(cg)
        if not gone:
            pending.append(cg)
        return use
    except Exception:  # noqa: BLE001
        return None


def _retry_cgroups(pending, wait_s=0.0):
    from sandbox import cgroup
    pending[:] = [cg for cg in pending if not cgroup.release(cg, wait_s=wait_s)[1]]


def _gpu_sharing():
    """Sets how GPU jobs share CUDA memory with their judge on this host
    (sandbox.layers.gpu_sharing: wire.CUDA_SHARING, _IPC_WHY) before any
    child is forked. Its driver probe also lets the NVIDIA driver make its
    device files (/dev/nvidia-uvm and the like) while a process still may:
    the driver makes them on first use through the setuid nvidia-modprobe,
    which a sandboxed child (no capabilities, no_new_privs) cannot run,
    and on a freshly booted host every CUDA call of the first evaluation
    then failed with error 304. Returns (how, what the probe said), ("",
    "") without a GPU."""
    global _IPC_WHY
    from sandbox import layers
    kind, detail = layers.gpu_sharing()
    if kind:
        from evaluate.judge import wire
        wire.CUDA_SHARING = kind
        _IPC_WHY = detail if kind == "ipc" else ""
    return kind, detail


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
    cgroups = []  # reaped children's cgroups with a process still leaving
    _set_subreaper()
    stale = _cgroup_prepare()
    if stale:
        versions["cgroups_stale_removed"] = stale
    sharing, nodes = _gpu_sharing()
    if sharing:
        versions["gpu_sharing"], versions["device_nodes"] = sharing, nodes
    emit({"event": "ready", **versions})
    eof = False
    last_sweep = 0.0
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
        # Reap finished children (and orphans: not ours to report).
        swept = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid not in children:
                continue
            swept = True
            job_id, grant_w = children.pop(pid, (None, None))
            if grant_w is not None:
                os.close(grant_w)
            by_id.pop(job_id, None)
            ev = {"event": "exit", "id": job_id, "pid": pid, "code": None, "signal": None}
            if os.WIFSIGNALED(status):
                ev["signal"] = os.WTERMSIG(status)
            else:
                ev["code"] = os.WEXITSTATUS(status)
            use = _release_cgroup(pid, cgroups)
            if use is not None:
                ev["cgroup"] = use
            emit(ev)
        now = time.monotonic()
        if swept or now - last_sweep > 1.0:
            last_sweep = now
            _sweep_orphans(children)
            if cgroups:
                _retry_cgroups(cgroups)
    _sweep_orphans({})
    _retry_cgroups(cgroups, wait_s=2.0)


if __name__ == "__main__":
    main()

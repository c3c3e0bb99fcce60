"""The jail of a job's child: the kernel's own namespaces, entered with
the same system calls container runtimes use, from the forked child.

Why not bubblewrap or another runner that execs: the warm parent's value
is a Python with torch imported (4.5-5.5 s a process on the GPU hosts);
an exec'ing jail would pay that on every evaluation. The mechanisms
themselves are the kernel's (mount and PID namespaces, tmpfs), audited
where every container runtime relies on them; this module only enters them.

Two parts, entered at two moments:

  view (enter_view)   a mount namespace of the child's own, made while it is
                      still root and single-threaded, before the judge is
                      forked (the judge shares it, and its /dev/shm, which
                      torch's CUDA IPC reference counts need by name):
                      - a private, size-limited tmpfs on /tmp and /dev/shm
                        (what a job writes there is counted by the size and
                        dies with the child; the host's /tmp entries are
                        still readable, bound read-only);
                      - a folder unprivileged users cannot traverse (a 0700
                        home holding the Python environment or the job
                        folder) is replaced by a tmpfs that shows only the
                        entries on the paths the job needs, bound back
                        read-only: the uid drop works wherever the
                        environment lives, and the rest of that home (keys,
                        tokens, other projects) is not in the view;
                      - the job folder and the job's writable paths bound
                        back read-write over all of that.
  pid namespace       (fork_jailed) the process that runs the job is forked
                      as pid 1 of a PID namespace of its own, after the judge
                      (which stays outside, where it can stop and account
                      the whole namespace): clone(CLONE_PARENT), setsid and
                      double forks cannot leave it, and when its init dies
                      (with the child that forked it: PDEATHSIG) the kernel
                      kills every process in it. sweep() kills them all at a
                      job's end (kill(-1) from the namespace's init).

Every function reports, never raises: a host without a mechanism runs the
job with what it has, and doctor names what is missing.
"""
import ctypes
import os
import re
import shutil
import signal
import stat
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
# The host's /tmp entries bound back read-only: past this many, the rest
# are left out of the view (a /tmp that full is not the job's business).
MAX_TMP_ENTRIES = 2048


def _err(what):
    e = ctypes.get_errno()
    return "%s: %s" % (what, os.strerror(e) if e else "failed")


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if _libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), _err("mount %s on %s" % (src or fstype, target)))


# ---------------------------------------------------------------- the view

def _chain(path):
    """path's folders from / down, path itself last."""
    out = []
    p = path
    while True:
        out.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return out[::-1]


def _closed_to_others(path):
    """A folder an unprivileged user cannot traverse."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IXOTH


class _Binder:
    """Bind mounts from fds opened before their source was covered."""

    def __init__(self):
        self.fds = []

    def open(self, path):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        self.fds.append(fd)
        return fd

    def bind(self, fd, target, readonly):
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            return
        if stat.S_ISDIR(st.st_mode):
            os.makedirs(target, exist_ok=True)
        elif not os.path.lexists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        src = "/proc/self/fd/%d" % fd
        _mount(src, target, None, MS_BIND | MS_REC)
        if readonly:
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _copy_link(path, target):
    try:
        os.symlink(os.readlink(path), target)
    except OSError:
        pass


def _shadow(folder, keep, binder, mode, size=None, readonly=True):
    """Covers folder with a tmpfs that shows only the entries named in keep
    (names of folder's entries; None: all of them), each bound back from
    the original (read-only unless told). Symbolic links are copied."""
    names = sorted(os.listdir(folder)) if keep is None else sorted(keep)
    names = names[:MAX_TMP_ENTRIES]
    held = []
    for n in names:
        p = os.path.join(folder, n)
        if os.path.islink(p):
            held.append((n, None, p))
            continue
        fd = binder.open(p)
        if fd is not None:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                held.append((n, fd, p))
    opts = "mode=%o" % mode + (",size=%d" % size if size else "")
    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, opts)
    shown = 0
    for n, fd, p in held:
        target = os.path.join(folder, n)
        if fd is None:
            _copy_link(p, target)
            shown += 1
            continue
        try:
            binder.bind(fd, target, readonly)
            shown += 1
        except FileNotFoundError:
            # Removed since it was listed (another program's temp file: on a
            # busy host /tmp changes all the time): nothing left to show.
            pass
    return shown


def _needed_below(folder, needs):
    """The names of folder's entries that lie on a needed path."""
    out = set()
    prefix = folder.rstrip("/") + "/"
    for p in needs:
        if p.startswith(prefix):
            out.add(p[len(prefix):].split("/", 1)[0])
    return out


def default_needs(extra=()):
    """What every job reads: the Python environment and its import path,
    the kernel caches and the toolchains named in the environment, and
    extra (the worker's own files)."""
    import sys
    needs = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable, os.path.realpath(sys.executable)]
    needs += list(extra) + [p for p in sys.path if p]
    home = os.path.expanduser("~")
    needs.append(os.environ.get("KEVOLVE_CACHE_DIR") or os.path.join(home, ".cache", "kevolve", "kernels"))
    for k in ("KEVOLVE_PCH_DIR", "TORCH_EXTENSIONS_DIR", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "KEVOLVE_NVCC",
              "TRITON_CACHE_DIR", "TRITON_HOME", "KEVOLVE_READ"):
        needs += [p for p in os.environ.get(k, "").split(os.pathsep) if p]
    return needs


def enter_view(needs, writable, tmp_bytes, shm_bytes):
    """Enters a mount namespace of this process's own and lays out the
    job's view (see the module's docstring). needs: paths the job must
    reach (read-only where they were hidden); writable: paths bound back
    read-write last (the job folder first). Returns (ok, detail)."""
    if os.geteuid() != 0:
        return False, "not root: the mount namespace needs CAP_SYS_ADMIN (uid %d)" % os.geteuid()
    if _libc.unshare(CLONE_NEWNS) != 0:
        return False, _err("unshare(CLONE_NEWNS)")
    binder = _Binder()
    rw = []
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        for p in writable:
            if p and not os.path.exists(p):
                os.makedirs(p, exist_ok=True)  # a folder the job is to write (the build step's PCH folders)
        writable = [os.path.realpath(p) for p in writable if p and os.path.exists(p)]
        rw = [(p, binder.open(p)) for p in writable]
        needs = sorted({os.path.realpath(p) for p in list(needs) + writable if p and os.path.exists(p)} |
                       {os.path.abspath(p) for p in needs if p and os.path.lexists(p)})
        hidden = []
        # Top-down, so a closed folder inside a shown one is handled after
        # it. A needed folder that is closed itself is shown whole.
        closed = {d for p in needs for d in _chain(p) if _closed_to_others(d)}
        for folder in sorted(closed, key=len):
            if folder in ("/", "/tmp") or not _closed_to_others(folder):
                continue
            if any(folder == w or folder.startswith(w.rstrip("/") + "/") for w in writable):
                # Bound whole and read-write below: a tmpfs laid over it here
                # took the job's writes (a 0700 PCH folder under /tmp: the
                # build step's headers were lost with the view, built again
                # every evaluation).
                continue
            whole = folder in needs
            _shadow(folder, None if whole else _needed_below(folder, needs), binder, 0o755 if whole else 0o711)
            hidden.append(folder)
        n_tmp = 0
        if os.path.isdir("/tmp"):
            n_tmp = _shadow("/tmp", None, binder, 0o1777, tmp_bytes)
        if os.path.isdir("/dev/shm"):
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=%d" % shm_bytes)
    except OSError as e:
        # Whatever was laid out stays; the writable folders are still bound
        # back on top (below), or the job could not write its own folder
        # under a read-only parent and would die before its first stage.
        failed = "the job's view: %s" % (e.strerror or e)
    else:
        failed = None
    try:
        for p, fd in rw:
            if fd is not None:
                binder.bind(fd, p, False)
    except OSError as e:
        failed = failed or "the job's view: its writable folders: %s" % (e.strerror or e)
    finally:
        binder.close()
    if failed:
        return False, failed
    detail = "private /tmp (%s, the host's %d entries read-only) and /dev/shm (%s)" % (_gib(tmp_bytes), n_tmp, _gib(shm_bytes))
    if hidden:
        detail += "; %s shown only where the job needs it" % ", ".join(hidden)
    return True, detail


# Mount points the read-only host leaves as they are: device files are
# opened for writing (/dev/shm is the view's own), and the NVIDIA driver
# writes its process's /proc files. /sys is sealed, as container runtimes
# mount it; so are /proc's host-wide knobs, bound onto themselves first
# (their files are root's: a candidate with the server's uid, a GPU job's,
# could write them where Landlock is missing).
_KEEP_WRITABLE_TREES = ("/proc", "/dev")
_SEALED_PROC = ("/proc/sys", "/proc/sysrq-trigger")
# Per-mount flags a read-only remount keeps (MS_NOSUID, MS_NODEV,
# MS_NOEXEC, MS_NOATIME, MS_NODIRATIME, MS_RELATIME): a remount sets them
# all at once.
_MOUNT_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                       "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}


def _unescape_mount_path(field):
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts():
    """This namespace's mounts: (mount point, per-mount options), in
    mount order."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5:
                out.append((_unescape_mount_path(parts[4]), parts[5].split(",")))
    return out


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def read_only_host(writable):
    """Moves this process into a mount namespace of its own (its judge,
    forked before, keeps the job's view) where every mount is read-only
    but the kernel's file systems and the writable paths (the job's
    folders; the view's private /tmp), each bound onto itself first where
    it is not a mount point already. It holds whatever the uid and
    Landlock give: a GPU job whose memory crosses by torch's IPC keeps the
    server's uid (that IPC fails across a uid: worker.py GPU_JAIL_GAP),
    and a host may have no Landlock. Returns (ok, detail)."""
    if os.geteuid() != 0:
        return False, "not root: the mount namespace needs CAP_SYS_ADMIN (uid %d)" % os.geteuid()
    if _libc.unshare(CLONE_NEWNS) != 0:
        return False, _err("unshare(CLONE_NEWNS)")
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        rw = sorted({os.path.realpath(p) for p in writable if p and os.path.isdir(p)})
        points = {point for point, _ in _mounts()}
        for p in rw:
            if p not in points:
                _mount(p, p, None, MS_BIND | MS_REC)
        sealed, refused = 0, []
        for p in _SEALED_PROC:
            if os.path.exists(p):
                try:
                    if p not in points:
                        _mount(p, p, None, MS_BIND)
                    _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
                    sealed += 1
                except OSError as e:
                    refused.append("%s (%s)" % (p, e.strerror or e))
        for point, opts in _mounts():
            # A writable path keeps its own mount only: what is mounted
            # below it is sealed too (the view's /tmp holds the host's
            # entries and the job's folder, whose judge/ is the harness's).
            if any(_under(point, t) for t in _KEEP_WRITABLE_TREES) or point in rw or "ro" in opts:
                continue
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
            for o in opts:
                flags |= _MOUNT_OPTION_FLAGS.get(o, 0)
            try:
                _mount(None, point, None, flags)
                sealed += 1
            except OSError as e:
                refused.append("%s (%s)" % (point, e.strerror or e))
    except OSError as e:
        return False, "the read-only host: %s" % (e.strerror or e)
    if refused:
        return False, "the read-only host: %d mounts stayed writable: %s" % (len(refused), ", ".join(refused[:4]))
    return True, "%d mounts read-only; writable: %s and /dev" % (sealed, ", ".join(rw))


def _gib(b):
    return "%.1f GiB" % (b / (1 << 30))


def scratch_bytes(mem_limit):
    """The size of the job's /tmp and /dev/shm each: its memory limit
    where it has one, else a quarter of the host's memory."""
    if mem_limit and mem_limit > 0:
        return int(mem_limit)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError):
        return 4 << 30


def empty_scratch():
    """Removes what the job left in its private /tmp and /dev/shm (the
    host's /tmp entries bound read-only stay). A kept child calls it
    between jobs: nothing of one job is there for the next."""
    left = 0
    for top in ("/dev/shm", "/tmp"):
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for n in names:
            p = os.path.join(top, n)
            if os.path.ismount(p):
                continue
            left += 1
            _remove(p)
    return left


def _remove(p):
    """rmtree's fd-based walk: a link the job left is removed, never followed."""
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p, ignore_errors=True)
        return
    try:
        os.unlink(p)
    except OSError:
        pass


# ---------------------------------------------------------------- the PID namespace

def fork_jailed():
    """Forks the job's process as the init (pid 1) of a new PID namespace:
    everything it starts, by any route, is born in that namespace and dies
    with it. The caller stays outside (a process whose children go to
    another namespace can no longer start threads, so the caller only
    waits). Returns (pid as fork() does, detail); pid is None where the
    host refuses the namespace (the caller then runs the job itself)."""
    if _libc.unshare(CLONE_NEWPID) != 0:
        return None, _err("unshare(CLONE_NEWPID)")
    return os.fork(), "the job's process is pid 1 of a PID namespace of its own: what it starts cannot leave it"


def keep(pid):
    """The keeper's part after fork_jailed: waits for the namespace's init
    and ends as it ended (its exit status, or its signal), never returning.
    The caller's parent keeps addressing the keeper; killing the keeper
    kills the namespace (the init's PDEATHSIG, then the kernel)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    exit_as(status)


def exit_as(status):
    """Ends this process as a child that ended with status (os.waitpid's)
    did: the same exit code, or the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            # SIGKILL's disposition cannot be set (OSError): a keeper that
            # tried exited 1 instead of dying by it, and a job killed at its
            # deadline read as "signal 0" when the keeper woke before the
            # kill of its group reached it (CI: TestWorkerJobs/timeout).
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def in_own_namespace():
    """Whether this process is the init of its PID namespace (fork_jailed)."""
    return os.getpid() == 1


# The host's numbers for this process (pid, parent, group), kept by
# enter_own_proc before /proc became the namespace's.
_HOST = {}


def _host_stat():
    with open("/proc/self/stat", "rb") as f:
        b = f.read()
    f = b[b.rfind(b")") + 2:].split()
    return {"pid": int(os.readlink("/proc/self")), "ppid": int(f[1]), "pgid": int(f[2])}


def enter_own_proc():
    """In the namespace's init, still root and single-threaded: a mount
    namespace of its own (a copy of the view: the same /tmp and /dev/shm
    as the judge's) with a /proc of its PID namespace. The CUDA driver
    reads its process's files under /proc/<getpid()>, which the host's
    /proc gives to the host's pid 1. Returns (ok, detail)."""
    try:
        _HOST.update(_host_stat())
    except (OSError, ValueError, IndexError):
        pass
    if _libc.unshare(CLONE_NEWNS) != 0:
        return False, _err("unshare(CLONE_NEWNS) for the namespace's /proc")
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as e:
        return False, "the namespace's /proc: %s" % (e.strerror or e)
    return True, "its /proc shows only the namespace"


def host_pid():
    """This process's pid as the host (and the Go side) knows it."""
    if "pid" in _HOST:
        return _HOST["pid"]
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def host_parent_and_group():
    """This process's parent and group as the host knows them (os.getppid
    and os.getpgid give 0 for processes outside its namespace)."""
    if "ppid" in _HOST:
        return _HOST["ppid"], _HOST["pgid"]
    try:
        h = _host_stat()
        return h["ppid"], h["pgid"]
    except (OSError, ValueError, IndexError):
        return os.getppid(), os.getpgid(0)


def sweep(timeout_s=2.0):
    """From the namespace's init: kills every other process of the
    namespace (kill(-1), which reaches exactly those) and reaps them.
    Returns whether there were any; None when this process is not the
    init of its own namespace (then nothing is done: kill(-1) elsewhere
    would reach every process of its uid on the host)."""
    if not in_own_namespace():
        return None
    _reap()  # finished children (zombies answer kill(-1, 0) too): not left running
    try:
        os.kill(-1, 0)
    except OSError:
        return False
    left = _others()
    if left:
        print("kevolve: the job left %d process(es) running in its jail, killed: %s" % (len(left), "; ".join(left)[:500]),
              file=sys.stderr, flush=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        _reap()
        try:
            os.kill(-1, 0)
        except OSError:
            break
        time.sleep(0.005)
    return True


def _others():
    """The command lines of the namespace's other processes (its own /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and d != "1":
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120] or "pid " + d)
            except OSError:
                pass
    return out


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


def members_of(pid):
    """The host pids of every process in the PID namespace pid's children
    are born in (pid's own not counted), or None when pid made none. For
    the judge: it freezes and accounts the jail as a whole."""
    try:
        own = os.readlink("/proc/%d/ns/pid" % pid)
        kids = os.readlink("/proc/%d/ns/pid_for_children" % pid)
    except OSError:
        return None
    if kids == own:
        return None
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink("/proc/%s/ns/pid" % d) == kids:
                    out.append(int(d))
            except OSError:
                pass
    return out

"""The sandbox a job's child enters before candidate code runs.

Each layer is best effort: what the host lacks is reported, never fatal, so
an evaluation still runs with the layers that exist. Layers, in the order
they are applied (each needs the privileges the next ones take away):

  view          a mount namespace with a private /tmp and /dev/shm and only
                the needed paths of closed folders (jail.enter_view: entered
                by the worker before the judge is forked, reported here)
  netns         an empty network namespace (no network unless asked for)
  pidns         the job's process is pid 1 of a PID namespace of its own
                (jail.fork_jailed: forked so by the worker, reported here)
  cgroup        the job's process (and all it starts) in a cgroup of its
                own: pids.max, the job's memory limit counting its tmpfs,
                killed and removed as one at its end (sandbox/cgroup.py: made and
                joined by the worker, reported here)
  uid           root drops to an unprivileged uid (65534), where the Python
                environment and the job folder are reachable by it
  capabilities  every capability dropped (bounding, ambient, effective)
  no_new_privs  PR_SET_NO_NEW_PRIVS: exec cannot gain privileges
  landlock      read and execute everywhere; write only under work/ (and
                the device files: GPU ioctls stay usable); TCP denied,
                signals and abstract sockets scoped to the job's processes
  seccomp       ptrace, process_vm_readv/writev and pidfd_getfd fail (EPERM)

Landlock, seccomp (without TSYNC) and no_new_privs apply to the calling
thread and the threads and processes it starts later, so the sandbox is
entered while the child is single-threaded (right after the fork).

`python -m sandbox.layers --probe` enters the sandbox in a throwaway child and
prints what it got, as JSON (kevolve-mcp doctor).
"""
import ctypes
import ctypes.util
import json
import os
import platform
import signal
import stat
import sys

from sandbox import jail

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
PR_SET_KEEPCAPS = 8
CAP_SYS_ADMIN = 21
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
UNPRIVILEGED = 65534

# Per-architecture: audit arch, syscall numbers of landlock (same on both),
# seccomp and the calls the filter refuses.
_ARCH = {
    "x86_64": {"audit": 0xC000003E, "seccomp": 317,
               "deny": {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
                        "unshare": 272, "setns": 308, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427},
               "admin_deny": {"mount": 165, "umount2": 166, "pivot_root": 155, "swapon": 167, "swapoff": 168,
                              "sethostname": 170, "setdomainname": 171, "bpf": 321, "fanotify_init": 300,
                              "quotactl": 179, "open_by_handle_at": 304, "open_tree": 428, "move_mount": 429,
                              "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442},
               "clone": 56, "clone3": 435, "x32": True},
    "aarch64": {"audit": 0xC00000B7, "seccomp": 277,
                "deny": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
                         "unshare": 97, "setns": 268, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427},
                "admin_deny": {"mount": 40, "umount2": 39, "pivot_root": 41, "swapon": 224, "swapoff": 225,
                               "sethostname": 161, "setdomainname": 162, "bpf": 280, "fanotify_init": 262,
                               "quotactl": 60, "open_by_handle_at": 265, "open_tree": 428, "move_mount": 429,
                               "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442},
                "clone": 220, "clone3": 435, "x32": False},
}
# clone() flags that make a namespace: refused (a user namespace needs no
# privilege, and inside one every other namespace can be made).
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446

# Landlock filesystem rights (include/uapi/linux/landlock.h), by ABI.
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_REFER, LL_TRUNCATE = 1 << 13, 1 << 14
LL_ALL_V1 = (1 << 13) - 1
LL_NET_BIND_TCP, LL_NET_CONNECT_TCP = 1, 2
LL_SCOPE_ABSTRACT_UNIX, LL_SCOPE_SIGNAL = 1, 2
LL_READ = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE


def _err(what):
    e = ctypes.get_errno()
    return "%s: %s" % (what, os.strerror(e) if e else "failed")


def _prctl(*args):
    args = [ctypes.c_ulong(a) for a in args] + [ctypes.c_ulong(0)] * (5 - len(args))
    return _libc.prctl(*args)


def set_pdeathsig():
    """This process is killed when its parent dies."""
    return _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) == 0


def set_subreaper():
    """Orphaned descendants are reparented to this process, not to init:
    a double-forked or setsid daemon stays in the tree that is killed."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


def landlock_abi():
    """The kernel's Landlock ABI version, 0 without Landlock."""
    r = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(r), 0)


def _arch():
    return _ARCH.get(platform.machine())


# ---------------------------------------------------------------- layers

def _netns():
    if _libc.unshare(CLONE_NEWNET) == 0:
        return True, "no network interfaces but loopback (down)"
    if os.geteuid() == 0:
        return False, _err("unshare(CLONE_NEWNET)")
    # Unprivileged: a user namespace mapping only our own ids, then the net one.
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return False, _err("unshare(CLONE_NEWUSER|CLONE_NEWNET)")
    try:
        for name, text in (("uid_map", "%d %d 1" % (uid, uid)), ("setgroups", "deny"), ("gid_map", "%d %d 1" % (gid, gid))):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    except OSError as e:
        return False, "user namespace id maps: %s" % e
    return True, "in a user namespace mapping only uid %d" % uid


def _world_reachable(path):
    """Whether an unprivileged user can reach path: every folder on the way
    searchable by others (the last one readable too)."""
    p = os.path.realpath(path)
    parts = [p]
    while p != os.path.dirname(p):
        p = os.path.dirname(p)
        parts.append(p)
    for i, d in enumerate(parts):
        try:
            m = os.stat(d).st_mode
        except OSError:
            return False
        need = stat.S_IXOTH if stat.S_ISDIR(m) else stat.S_IROTH
        if i == 0 and stat.S_ISDIR(m):
            need |= stat.S_IROTH
        if m & need != need:
            return False
    return True


def _device_groups():
    """Groups that own GPU device files only their group may open (/dev/kfd
    and /dev/dri/render* are often 0660 root:render)."""
    gids = set()
    for d in ("/dev", "/dev/dri"):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if not (n.startswith(("nvidia", "kfd", "render", "card"))):
                continue
            try:
                st = os.stat(os.path.join(d, n))
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode) and st.st_mode & 0o060 and not st.st_mode & 0o006:
                gids.add(st.st_gid)
    return sorted(gids)


def _chown_tree(root, uid, gid):
    os.chown(root, uid, gid)
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            os.lchown(os.path.join(d, n), uid, gid)


def _drop_uid(work_dir, need, writable=(), keep_caps=False):
    """Drops root to UNPRIVILEGED. keep_caps: the permitted capabilities
    survive the change (PR_SET_KEEPCAPS), for _drop_caps to keep some."""
    if os.geteuid() != 0:
        return False, "not root (uid %d): nothing to drop" % os.geteuid()
    far = [p for p in need if p and not _world_reachable(p)]
    if far:
        return False, "%s is not reachable by an unprivileged user (a folder on its path is not searchable by others); stayed uid 0 without capabilities" % far[0]
    try:
        # The job folder, and the folders the job was given to write (the
        # Go side gives them back to the server's user when the job ends).
        for d in [work_dir] + [p for p in writable if os.path.isdir(p)]:
            _chown_tree(d, UNPRIVILEGED, UNPRIVILEGED)
        os.setgroups(_device_groups())
        os.setresgid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
        if keep_caps and _prctl(PR_SET_KEEPCAPS, 1) != 0:
            return False, _err("prctl(PR_SET_KEEPCAPS)")
        os.setresuid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
    except OSError as e:
        return False, "setuid: %s" % e
    return True, "uid and gid %d, device groups kept" % UNPRIVILEGED


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_bounding():
    """Bounding set, ambient set and root's securebits: what exec could
    give back. Needs CAP_SETPCAP, so before the uid changes."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    # NOROOT|NOROOT_LOCKED|NO_SETUID_FIXUP_LOCKED...: uid 0 gains nothing by exec.
    _prctl(PR_SET_SECUREBITS, 0x1 | 0x2 | 0x8)


def _drop_caps(keep_admin=False):
    """Empties every capability set; keep_admin keeps CAP_SYS_ADMIN alone in
    the effective and permitted sets (the profiler's counters: see
    sandbox/profiled.py), never inheritable or in the bounding set."""
    hdr = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    if keep_admin:
        data[0].effective = data[0].permitted = 1 << CAP_SYS_ADMIN
    if _libc.capset(ctypes.byref(hdr), data) != 0:
        return False, _err("capset")
    with open("/proc/self/status") as f:
        eff = [ln.split()[1] for ln in f if ln.startswith(("CapEff", "CapBnd"))]
    allowed = (1 << CAP_SYS_ADMIN) if keep_admin else 0
    if any(int(x, 16) & ~allowed for x in eff):
        return False, "capabilities left: %s" % " ".join(eff)
    if keep_admin:
        return True, "CAP_SYS_ADMIN alone kept, for the GPU's performance counters; inheritable, ambient and bounding sets empty"
    return True, "effective, permitted, inheritable, ambient and bounding sets empty"


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock_rule(ruleset, path, rights):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= LL_FILE_RIGHTS
        attr = _PathBeneath(rights, fd)
        return _libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(attr), 0) == 0
    finally:
        os.close(fd)


def _dev_entries():
    """Every entry of /dev but the shared-memory folders: device files
    (GPUs, /dev/null, ttys) are opened for writing, /dev/shm is not ours."""
    out = []
    for e in os.scandir("/dev"):
        if e.name in ("shm", "mqueue") or e.is_symlink():
            continue
        out.append(e.path)
    return out


def _landlock(work_dir, extra_write, network):
    abi = landlock_abi()
    if abi <= 0:
        return False, "the kernel has no Landlock (needs Linux 5.13+ with landlock in the LSM list)", {}
    fs = LL_ALL_V1 | (LL_REFER if abi >= 2 else 0) | (LL_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(fs, 0, 0)
    size = 8
    if abi >= 4 and not network:
        attr.net, size = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP, 16
    if abi >= 6:
        attr.scoped, size = LL_SCOPE_SIGNAL | (0 if network else LL_SCOPE_ABSTRACT_UNIX), 24
    ruleset = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return False, _err("landlock_create_ruleset (ABI %d)" % abi), {}
    try:
        _landlock_rule(ruleset, "/", LL_READ)
        for p in _dev_entries():
            _landlock_rule(ruleset, p, LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE | LL_READ_DIR)
        # The NVIDIA driver writes to its own process's /proc files when it
        # initializes: without this every CUDA call fails with error 304
        # (measured on the H100 host). Another process's files stay out of
        # reach (Landlock also scopes ptrace access, which /proc/PID/mem
        # needs); a descendant that uses CUDA itself would need its own.
        # /proc/self: the host's procfs names this process by its host pid
        # (os.getpid() is 1 in the job's own PID namespace).
        _landlock_rule(ruleset, "/proc/self", LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE | LL_READ_DIR)
        for p in [work_dir] + list(extra_write or []):
            if not _landlock_rule(ruleset, p, fs):
                return False, "landlock rule for %s failed" % p, {}
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return False, _err("landlock_restrict_self"), {}
    finally:
        os.close(ruleset)
    what = {"abi": abi, "tcp_denied": bool(attr.net), "signals_scoped": bool(attr.scoped & LL_SCOPE_SIGNAL)}
    where = ", ".join([work_dir] + list(extra_write or []))
    return True, "ABI %d: write only under %s%s" % (abi, where, ", TCP denied" if attr.net else ""), what


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _denied(arch, admin):
    """The calls the filter refuses: admin adds what CAP_SYS_ADMIN would
    otherwise allow (mounts, swap, BPF, ...), for a process that keeps it."""
    deny = dict(arch["deny"])
    if admin:
        deny.update(arch["admin_deny"])
    return deny


def seccomp_program(arch, admin=False):
    """A BPF program: a foreign architecture, an x32 call, a denied call or
    a clone() that makes a namespace returns EPERM; clone3 returns ENOSYS
    (its flags sit in memory a filter cannot read: the C library then falls
    back to clone, whose flags it can); everything else is allowed."""
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    # (op, k, label if true, label if false); None: the next instruction.
    code = [(LD, 4, None, None), (JEQ, arch["audit"], None, "eperm"), (LD, 0, None, None)]
    if arch["x32"]:
        code.append((JGE, 0x40000000, "eperm", None))
    code += [(JEQ, nr, "eperm", None) for nr in sorted(_denied(arch, admin).values())]
    code += [(JEQ, arch["clone3"], "enosys", None), (JEQ, arch["clone"], None, "allow"),
             (LD, 16, None, None),  # args[0], its low 32 bits (little-endian): the flags
             (JSET, CLONE_NEW_FLAGS, "eperm", "allow")]
    labels = {"allow": len(code), "eperm": len(code) + 1, "enosys": len(code) + 2}
    prog = []
    for i, (op, k, jt, jf) in enumerate(code):
        off = lambda lab: 0 if lab is None else labels[lab] - i - 1  # noqa: E731
        prog.append((op, off(jt), off(jf), k) if op != LD else (LD, 0, 0, k))
    return prog + [(RET, 0, 0, ALLOW), (RET, 0, 0, EPERM), (RET, 0, 0, ENOSYS)]


def _seccomp(admin=False):
    arch = _arch()
    if arch is None:
        return False, "no filter for architecture %s" % platform.machine()
    prog = seccomp_program(arch, admin)
    arr = (_SockFilter * len(prog))(*[_SockFilter(c, t, f, k) for c, t, f, k in prog])
    fprog = _SockFprog(len(prog), arr)
    # SECCOMP_SET_MODE_FILTER with TSYNC: every thread of the process.
    r = _libc.syscall(arch["seccomp"], 1, 1, ctypes.byref(fprog))
    if r != 0:
        return False, _err("seccomp(SECCOMP_SET_MODE_FILTER)")
    return True, "EPERM for %s and namespace-making clone(); ENOSYS for clone3" % ", ".join(sorted(_denied(arch, admin)))


# ---------------------------------------------------------------- entry

def private_env(work_dir):
    """The job's own home, temp and caches (Triton, inductor), all under
    work/: a kept child keeps its folder, and these, for its next job."""
    cache = os.path.join(work_dir, ".cache")
    env = {"HOME": work_dir, "TMPDIR": os.path.join(work_dir, "tmp"), "XDG_CACHE_HOME": cache,
           "TRITON_CACHE_DIR": os.path.join(cache, "triton"),
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor")}
    for k in ("TMPDIR", "XDG_CACHE_HOME"):
        os.makedirs(env[k], exist_ok=True)
    return env


def _build_caches(work_dir, builder):
    """The build caches. A candidate's builds (the kevolve loaders' and
    load_inline's) go to its job's own folder: nothing it compiles is ever
    loaded by another evaluation. The shared caches hold only what the
    harness's build step made (kevolve._prepare: the precompiled headers,
    shared bindings and the extensions of literal load_inline calls, keyed
    by content and verified when used); the
    candidate reads them (KEVOLVE_PCH_DIR) and cannot write them (the
    read-only host, Landlock and, where dropped, its uid). builder: the
    harness's build step itself, which writes them. Returns the detail."""
    shared = os.environ.get("KEVOLVE_CACHE_DIR", "")
    if builder:
        if shared:
            os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(shared, "torch_extensions")
        return ("the harness's build step: writes only the shared precompiled headers (%s) and extensions (%s)"
                % (os.path.join(shared, "pch"), os.path.join(shared, "torch_extensions")))
    private = os.path.join(work_dir, ".cache", "kernels")
    if shared and not os.environ.get("KEVOLVE_PCH_DIR"):
        os.environ["KEVOLVE_PCH_DIR"] = os.path.join(shared, "pch")
    if shared:
        # What the harness's build step built for this source (kevolve/_extcache.py).
        os.environ["KEVOLVE_SHARED_EXT_DIR"] = os.path.join(shared, "torch_extensions")
    os.environ["KEVOLVE_CACHE_DIR"] = private
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(private, "torch_extensions")
    return "the candidate's builds private to its job (%s); the harness's precompiled headers read-only" % private


def enter(work_dir, need_reachable=(), extra_write=(), network=False, view=None, pidns=None, builder=False, job_write=(),
          keep_uid="", cgroup=None, keep_admin=False):
    """Applies every layer this host allows; returns {"active": [...],
    "missing": {layer: why}, "detail": {layer: what}}. view: (ok, detail)
    of the mount namespace the worker entered before (jail.enter_view);
    pidns: (ok, detail) of the PID namespace it forked this process into;
    cgroup: (ok, detail) of the cgroup this process joined (cgroup.join).
    builder: the harness's own build step (kevolve._prepare), which keeps
    the server's uid to write the shared precompiled headers; Landlock
    still confines its writes to them and its job folder. job_write: the
    folders the job was given to write, handed to the unprivileged uid.
    keep_uid: why the candidate keeps the server's uid (worker.py GPU_JAIL_GAP), or "".
    keep_admin: CAP_SYS_ADMIN stays (a profiled process on a host whose GPU
    counters are for admins: sandbox/profiled.py), with the calls it would
    open refused by seccomp."""
    rep = {"active": [], "missing": {}, "detail": {}}

    def layer(name, ok, why):
        (rep["active"].append(name) if ok else rep["missing"].__setitem__(name, why))
        if ok:
            rep["detail"][name] = why

    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        rep["detail"]["threads"] = "%d threads when the sandbox was entered: landlock and no_new_privs hold only for this one and its descendants" % threads
    if view is not None:
        layer("view", *view)
    if network:
        rep["missing"]["netns"] = "the job asked for network"
    else:
        layer("netns", *_netns())
    if pidns is not None:
        layer("pidns", *pidns)
    if cgroup is not None:
        layer("cgroup", *cgroup)
    root = os.geteuid() == 0
    layer("build_cache", True, _build_caches(work_dir, builder))
    extra_write = list(extra_write or ())
    if view is not None and view[0]:
        # The view's /tmp is the job's own tmpfs (the host's entries in it
        # are bound read-only): candidates that write there may.
        extra_write.append("/tmp")
    layer("read_only", *jail.read_only_host([work_dir] + extra_write))
    if root:
        _drop_bounding()
    if builder:
        ok, why = False, "the harness's build step keeps the server's uid (no candidate code runs in it)"
        rep["detail"]["uid"] = why
    elif keep_uid:
        ok = False
        layer("uid", ok, keep_uid)
    else:
        ok, why = _drop_uid(work_dir, list(need_reachable) + [work_dir], job_write, keep_caps=keep_admin)
        layer("uid", ok, why)
    if root:
        layer("capabilities", *_drop_caps(keep_admin))
    ok = _prctl(PR_SET_NO_NEW_PRIVS, 1) == 0
    layer("no_new_privs", ok, "set" if ok else _err("prctl(PR_SET_NO_NEW_PRIVS)"))
    ok, why, what = _landlock(work_dir, extra_write, network)
    layer("landlock", ok, why)
    if what:
        rep["landlock"] = what
    layer("seccomp", *_seccomp(keep_admin))
    reaper = ctypes.c_int(0)
    ok = _libc.prctl(37, ctypes.byref(reaper), 0, 0, 0) == 0 and reaper.value == 1  # PR_GET_CHILD_SUBREAPER
    layer("subreaper", ok, "the job's process is the subreaper of all it starts" if ok else "PR_SET_CHILD_SUBREAPER was not set")
    if keep_uid:
        _stand_ins(rep)
    return rep


def probe():
    """Enters the jail and the sandbox as a job's child does (the view,
    then a process of its own PID namespace) in throwaway processes over
    a temporary folder, and checks that a write outside it fails; prints
    the report as JSON."""
    import tempfile
    from sandbox import cgroup
    cgroup.prepare(clean=False)  # this process names the probe's cgroup, as the worker names its jobs'
    base = tempfile.mkdtemp(prefix="kevolve-sandbox-probe-")
    work, judge = os.path.join(base, "work"), os.path.join(base, "judge")
    os.makedirs(work)
    os.makedirs(judge)
    os.chmod(base, 0o711)
    sharing = gpu_sharing()
    pid, rep = in_throwaway(lambda: _probe_child(base, work, judge, sharing))
    cgroup.release(cgroup.handle(pid), wait_s=2.0)
    import shutil
    shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(rep))


def can_write(path):
    """Whether this process can create (or replace) the file path and write it."""
    try:
        with open(path, "w") as f:
            f.write("x")
        return True
    except OSError:
        return False


def in_throwaway(fn):
    """Runs fn() in a forked child, which then exits; returns the child's
    pid and the dict fn returned there ({"error"} where it raised), once
    the child has ended. A process fn forks that returns from it too (a
    jail's init) reports in its place; one that ends inside it (a keeper)
    reports nothing."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            rep = fn()
        except BaseException as e:  # noqa: BLE001 - reported
            rep = {"error": repr(e)}
        os.write(w, json.dumps(rep).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.waitpid(pid, 0)
    return pid, json.loads(b"".join(chunks) or b"{}")


# The layers a GPU job runs without (worker.py's GPU_JAIL_GAP says why):
# for each, the layer that stands in for it where active, and what it holds.
GPU_GAP_LAYERS = {
    "pidns": ("cgroup", "the job's cgroup: every process it starts stays in it (no clone(CLONE_PARENT) or setsid "
                        "leaves it), and the judge freezes, accounts and kills by it"),
    "uid": ("read_only", "the read-only host (with Landlock where the kernel has it, and no capabilities): the "
                         "candidate writes only its own folders"),
}


def _stand_ins(rep):
    """Names, in a GPU job's report, what stands in for each layer it runs
    without, where that layer is active."""
    for name, (instead, what) in GPU_GAP_LAYERS.items():
        if name in rep["missing"] and instead in rep["active"]:
            rep.setdefault("replaced", {})[name] = what


# The driver probe of gpu_sharing, run by the worker's Python: whether
# device 0 has virtual memory management (attribute 102) and exports its
# allocations as POSIX descriptors (103), what evaluate/judge/vmm.py needs.
_DRIVER_PROBE = """import ctypes, sys
lib = ctypes.CDLL("libcuda.so.1")
r = lib.cuInit(0)
if r:
    print("cuInit returned %d" % r); sys.exit(0)
d, a, b = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
lib.cuDeviceGet(ctypes.byref(d), 0)
lib.cuDeviceGetAttribute(ctypes.byref(a), 102, d)
lib.cuDeviceGetAttribute(ctypes.byref(b), 103, d)
print("vmm=%d posix_fd=%d" % (a.value, b.value))
"""


def gpu_sharing(timeout=60):
    """How this host's GPU jobs share CUDA memory with their judge, and
    what the driver probe said: ("vmm", ...) by descriptor
    (evaluate/judge/vmm.py), in a CPU job's jail; ("ipc", why) by torch's
    IPC handles (an AMD GPU; an NVIDIA driver that cannot export a
    descriptor), without GPU_GAP_LAYERS; ("", "") on a host without a GPU.
    The driver is asked in a throwaway process: the caller (the warm
    parent, doctor's probe) must leave CUDA uninitialized for the children
    it forks, and needs no torch for this."""
    if os.path.exists("/dev/nvidiactl"):
        import subprocess
        try:
            r = subprocess.run([sys.executable, "-c", _DRIVER_PROBE], timeout=timeout, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True)
        except (OSError, subprocess.SubprocessError) as e:
            return "ipc", "the driver probe failed: %r" % (e,)
        out = (r.stdout or "").strip() or "the driver probe exited %d: %s" % (r.returncode, (r.stderr or "")[-200:])
        return ("vmm", out) if out == "vmm=1 posix_fd=1" else ("ipc", "the NVIDIA driver exports no descriptor: %s" % out)
    if os.path.exists("/dev/kfd"):
        return "ipc", "an AMD GPU: torch's HIP IPC"
    return "", ""


def _gpu_jobs_gap(rep, sharing):
    """Where GPU jobs share by torch's IPC (gpu_sharing), the probe's layers
    are a CPU job's only: a GPU job runs without GPU_GAP_LAYERS, and doctor
    says so and what stands in."""
    kind, why = sharing
    if kind != "ipc":
        return
    for name in GPU_GAP_LAYERS:
        if name in rep["active"]:
            rep["active"].remove(name)
            rep["missing"][name] = ("CPU jobs only: a GPU job runs without it, since its memory crosses to the judge by "
                                    "torch's IPC (%s), which fails across it (cudaErrorMapBufferObjectFailed)" % why)
    _stand_ins(rep)


def _probe_child(base, work, judge, sharing):
    rep = {}
    try:
        from sandbox import cgroup
        set_subreaper()  # as a job's child does; not inherited by fork
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the worker's folder, above sandbox/
        view = jail.enter_view(jail.default_needs([here]), [base], 1 << 30, 1 << 30)
        cg, cg_why = cgroup.make(os.getpid(), 1 << 30)
        pid, why = jail.fork_jailed()
        if pid not in (None, 0):
            _, status = os.waitpid(pid, 0)
            os._exit(0)
        cg_rep = cgroup.join(cg) if cg is not None else (False, cg_why)
        ok, proc = jail.enter_own_proc()
        pidns = (ok, why + "; " + proc)
        set_subreaper()
        rep = enter(work, need_reachable=[sys.executable, here], view=view, pidns=pidns, cgroup=cg_rep)
        _gpu_jobs_gap(rep, sharing)
        for name, path in (("judge_dir", os.path.join(judge, "x")), ("work_dir", os.path.join(work, "x"))):
            if can_write(path):
                rep.setdefault("writable", []).append(name)
    except BaseException as e:  # noqa: BLE001
        rep["error"] = repr(e)
    return rep


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        probe()

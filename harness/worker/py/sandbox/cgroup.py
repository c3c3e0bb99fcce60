"""The job's cgroup: the jail's processes counted, limited and killed as
one group, where the host lets the worker make one.

Why a cgroup on top of the PID namespace (sandbox/jail.py): the namespace keeps
every process the job starts where it can be found and dies with its
init, but it bounds nothing while the job runs and counts nothing:
  - pids.max: a fork or thread bomb stops at the cgroup's limit (fork and
    clone fail with EAGAIN) instead of filling the host's process table;
  - memory: the limit counts what the job's processes write to the tmpfs
    of its private /tmp and /dev/shm (page cache charged to the cgroup
    that wrote it), which neither the address-space limit (RLIMIT_AS: a
    write() maps nothing) nor the Go side's resident-memory watch sees;
    at the limit the kernel's OOM killer ends the job;
  - kill-by-cgroup: whatever is left in it when the worker reaps the
    job's child is killed (frozen first, so nothing forks meanwhile) and
    the cgroup removed, whatever the processes' namespace or parent link;
    a GPU job, which runs without a PID namespace, also kills what is in
    its cgroup at each job's end;
  - CPU accounting (cpuacct, or v2's cpu.stat) of the whole jail.

Layout: one folder per job's child, made by the worker's child while it
is still root, in each hierarchy below the worker's own cgroup (the
host's limits on the worker still hold for its jobs), and nothing else:
    <hierarchy>/<worker's cgroup>/kevolve.w<pidns>.<pid>.<start>.c<child>
named by the worker (its PID namespace, pid and start time: a crashed
worker's folders are found and removed by the next one's clean_stale)
and the child's pid (the parent finds the folder of a child it reaped,
release). The job's process (the PID namespace's init, else the child
itself) joins it before it runs or forks anything (join); the judge,
forked before, stays outside. v1 (pids, memory, freezer, cpuacct) where
its controllers are mounted, else v2 (pids, memory where the worker's
cgroup can hand them on; membership, freezing, killing and cpu.stat are
its core, made even where it cannot: _v2_controllers). KEVOLVE_CGROUP_ROOT names another folder than
/sys/fs/cgroup to look for the hierarchies in.

Every function reports, never raises: a host without a writable cgroupfs
(a container's is often read-only) runs the job as before, and the
sandbox's report and doctor say why the layer is missing.
"""
import errno
import os
import signal
import time

ROOT_ENV = "KEVOLVE_CGROUP_ROOT"
PREFIX = "kevolve."
V1_CONTROLLERS = ("pids", "memory", "freezer", "cpuacct")
V2_CONTROLLERS = ("pids", "memory")


def pids_max():
    """Tasks (processes and threads: both v1 and v2 count each thread) the
    job may have at once. An honest job's peak is torch's thread pools
    (intra-op, inter-op and OpenMP: about three per core, started lazily),
    a build's compiler processes (ninja -j cores, three to five processes
    an nvcc) and inductor's compile workers (at most 32, a few threads
    each): well under 4096 on a 128-core host. A fork bomb stops there,
    having cost the host about 1 GiB (4096 small processes); above 128
    cores the limit grows with them."""
    return max(4096, 32 * (os.cpu_count() or 1))


# ---------------------------------------------------------------- where

_LAYOUT = None  # (layout or None, why), found once per worker (inherited by its children)
_WORKER = None  # this worker's name prefix


def _read(path):
    with open(path) as f:
        return f.read()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _mounts(root):
    """The cgroup mounts at or under root: [(mountpoint, mount root, fstype,
    super options)], from /proc/self/mountinfo."""
    out = []
    root = root.rstrip("/") or "/"
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3 or r[0] not in ("cgroup", "cgroup2"):
            continue
        mp = f[4].replace("\\040", " ")
        if mp == root or mp.startswith(root + "/"):
            out.append((mp, f[3], r[0], r[2].split(",")))
    return out


def _own():
    """This process's cgroup per v1 controller, and its v2 cgroup ("")."""
    own = {}
    for line in _read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for c in (parts[1].split(",") if parts[1] else [""]):
                own[c] = parts[2]
    return own


def _below(mountpoint, mount_root, path):
    """The folder of cgroup path in a hierarchy mounted at mountpoint."""
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root):]
    return os.path.normpath(os.path.join(mountpoint, path.lstrip("/")))


def _writable(path):
    """(ok, why): whether cgroups can be made in the folder path (access(2):
    EROFS on a read-only mount even for root)."""
    if not os.path.isdir(path):
        return False, "%s is not there" % path
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.access(path.encode(), os.W_OK) == 0:
        return True, ""
    e = ctypes.get_errno()
    ro = " (the cgroup filesystem is mounted read-only, as a container's usually is)" if e == errno.EROFS else ""
    return False, "%s is not writable: %s%s" % (path, os.strerror(e) if e else "access denied", ro)


def layout():
    """(layout, why): where this host lets the worker make jobs' cgroups,
    {"version": 1 or 2, "dirs": {controller: the worker's own cgroup's
    folder}}, or None and why not. Found once."""
    global _LAYOUT
    if _LAYOUT is None:
        try:
            _LAYOUT = _find()
        except Exception as e:  # noqa: BLE001 - reported, never fatal
            _LAYOUT = (None, "cgroups: %r" % (e,))
    return _LAYOUT


def _find():
    root = os.environ.get(ROOT_ENV) or "/sys/fs/cgroup"
    if os.geteuid() != 0:
        return None, "not root (uid %d): the worker cannot make cgroups" % os.geteuid()
    mounts = _mounts(root)
    if not mounts:
        return None, "no cgroup filesystem is mounted at or under %s" % root
    own = _own()
    dirs = {}
    for mp, mroot, fstype, opts in mounts:
        if fstype != "cgroup":
            continue
        for c in V1_CONTROLLERS:
            if c in opts and c not in dirs and c in own:
                dirs[c] = _below(mp, mroot, own[c])
    version = 1
    if "pids" not in dirs:
        if "memory" in dirs:
            return None, "cgroup v1 without a pids hierarchy under %s: a fork bomb would not be stopped" % root
        version = 2
        v2 = [(mp, mroot) for mp, mroot, fstype, _ in mounts if fstype == "cgroup2"]
        if not v2 or "" not in own:
            return None, "no v1 pids hierarchy and no v2 hierarchy under %s" % root
        mine = _below(v2[0][0], v2[0][1], own[""])
        have = _read(os.path.join(mine, "cgroup.controllers")).split()
        use = [c for c in V2_CONTROLLERS if c in have]
        dirs = {"core": mine}
    for d in sorted(set(dirs.values())):
        ok, why = _writable(d)
        if not ok:
            return None, why
    short = ""
    if version == 2:
        short = _v2_controllers(mine, use, have)
        dirs.update({c: mine for c in use if not short})
    return {"version": version, "dirs": dirs, "short": short}, ""


def _v2_controllers(mine, use, have):
    """Hands use (v2's pids and memory, where the worker's cgroup has them)
    to the jobs' cgroups; returns "" or what the jobs' cgroups lack and why.
    Without them a job's v2 cgroup is still its core (membership, which no
    fork, CLONE_PARENT or setsid leaves; cgroup.freeze, cgroup.kill and
    cpu.stat): a GPU host's container (the H200s here) offers memory alone,
    and a PID namespace is not made for GPU jobs, so the core is what
    keeps their processes together."""
    if "pids" not in use:
        return "no pids controller in the worker's cgroup %s (has: %s): forks are not limited" % (mine, " ".join(have) or "none")
    try:
        _write(os.path.join(mine, "cgroup.subtree_control"), " ".join("+" + c for c in use))
    except OSError as e:
        # A cgroup hands controllers to its children only where it has no
        # processes of its own (the root excepted).
        return "enabling %s for the children of %s: %s (a cgroup with processes of its own cannot give its children controllers): forks are not limited" % (
            ", ".join(use), mine, e.strerror or e)
    return ""


def folder(cg):
    """The folder of cg whose cgroup.procs lists its processes and where
    v2's core files are (v1: the pids hierarchy's)."""
    return cg["dirs"]["core"] if cg["version"] == 2 else cg["dirs"]["pids"]


def _start_time(pid):
    b = _read("/proc/%d/stat" % pid)
    return int(b[b.rfind(")") + 2:].split()[19])


def _worker_name():
    """w<pidns inode>.<pid>.<start time>: this worker, told from another
    (of this or another PID namespace) and from one that reused its pid."""
    global _WORKER
    if _WORKER is None:
        ns = os.readlink("/proc/self/ns/pid").strip("pid:[]")
        _WORKER = "w%s.%d.%d" % (ns, os.getpid(), _start_time(os.getpid()))
    return _WORKER


def handle(child):
    """The cgroup of the worker's child child: {"version", "dirs":
    {controller: folder}}, or None where the host makes none. The parent
    and the child compute the same (layout() and the worker's name are
    found in the parent, before the fork)."""
    lay, _ = layout()
    if lay is None:
        return None
    try:
        name = "%s%s.c%d" % (PREFIX, _worker_name(), child)
    except (OSError, ValueError, IndexError):
        return None
    return _named(lay, name)


def _named(lay, name):
    """The cgroup called name in every folder of the layout lay."""
    return {"version": lay["version"], "dirs": {c: os.path.join(d, name) for c, d in lay["dirs"].items()},
            "short": lay.get("short", "")}


def prepare(clean=True):
    """In the worker, before its first child: finds the layout and names
    the worker (inherited by every child), and removes what crashed
    workers left (clean_stale). Returns how many cgroups were removed."""
    try:
        layout()
        _worker_name()
        return clean_stale() if clean else 0
    except Exception:  # noqa: BLE001
        return 0


# ---------------------------------------------------------------- make, join

def make(child, mem_limit):
    """In the worker's child, still root: makes its cgroup with its
    limits. Returns (handle or None, detail or why not)."""
    lay, why = layout()
    if lay is None:
        return None, why
    try:
        cg = handle(child)
        if cg is None:
            return None, "the worker's name for its cgroups: /proc/self unreadable"
        dirs = cg["dirs"]
        made = []
        for d in sorted(set(dirs.values())):
            os.mkdir(d, 0o755)  # not there before: a folder of the same name may still be being released
            made.append(d)
        v1 = cg["version"] == 1
        what = []
        if "pids" in dirs:
            n = pids_max()
            _write(os.path.join(dirs["pids"], "pids.max"), str(n))
            what.append("pids.max %d" % n)
        else:
            what.append(cg["short"])
        if "memory" in dirs:
            mem = dirs["memory"]
            if mem_limit and mem_limit > 0:
                _write(os.path.join(mem, "memory.limit_in_bytes" if v1 else "memory.max"), str(int(mem_limit)))
                # Where swap is counted, the limit holds swapped pages too:
                # a full tmpfs cannot move to swap and start again.
                for f, v in (("memory.memsw.limit_in_bytes", str(int(mem_limit))), ("memory.swap.max", "0")):
                    p = os.path.join(mem, f)
                    if os.path.exists(p):
                        try:
                            _write(p, v)
                        except OSError:
                            pass
                what.append("memory limit %.2f GiB (counts the job's tmpfs /tmp and /dev/shm)" % (mem_limit / (1 << 30)))
            else:
                what.append("memory counted, no limit")
        elif mem_limit and mem_limit > 0:
            what.append("no memory controller: the job's memory limit does not count its tmpfs")
        if v1:
            what += [c for c in ("freezer", "cpuacct") if c in dirs]
        else:
            what += ["freeze", "kill", "cpu.stat"]
        cg["detail"] = "cgroup v%d: %s (%s)" % (cg["version"], ", ".join(what), os.path.basename(folder(cg)))
        return cg, cg["detail"]
    except Exception as e:  # noqa: BLE001
        for d in locals().get("made", ()):
            try:
                os.rmdir(d)
            except OSError:
                pass
        return None, "making the job's cgroup: %s" % (getattr(e, "strerror", None) or e)


def join(cg):
    """Moves the calling process into cg (each hierarchy's cgroup.procs;
    "0" is the writer, whatever its PID namespace): before it starts
    anything, so all it starts is born there. Returns (ok, detail)."""
    if cg is None:
        return False, "no cgroup"
    try:
        for d in sorted(set(cg["dirs"].values())):
            _write(os.path.join(d, "cgroup.procs"), "0")
    except OSError as e:
        return False, "joining the job's cgroup: %s" % (e.strerror or e)
    return True, cg.get("detail") or "in the job's cgroup"


# ---------------------------------------------------------------- counters

def _field(path, key):
    """The number after key in a "key value" file, 0 when absent."""
    try:
        for line in _read(path).splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _number(path):
    try:
        return int(_read(path).split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def counters(cg):
    """What the cgroup counted so far: {"forks_refused" (at pids.max),
    "oom_kills" (at the memory limit), "pids_max", "mem_limit" (0: none),
    "mem_peak", "cpu_s"}; None without one. Readable by an unprivileged
    process in it."""
    if cg is None:
        return None
    d = cg["dirs"]
    v1 = cg["version"] == 1
    out = {}
    if "pids" in d:
        out = {"forks_refused": _field(os.path.join(d["pids"], "pids.events"), "max"),
               "pids_max": _number(os.path.join(d["pids"], "pids.max"))}
    if "memory" in d:
        m = d["memory"]
        out["oom_kills"] = _field(os.path.join(m, "memory.oom_control" if v1 else "memory.events"), "oom_kill")
        lim = _number(os.path.join(m, "memory.limit_in_bytes" if v1 else "memory.max"))
        out["mem_limit"] = lim if lim < (1 << 62) else 0
        out["mem_peak"] = _number(os.path.join(m, "memory.max_usage_in_bytes" if v1 else "memory.peak"))
    if v1 and "cpuacct" in d:
        out["cpu_s"] = round(_number(os.path.join(d["cpuacct"], "cpuacct.usage")) / 1e9, 3)
    elif not v1:
        out["cpu_s"] = round(_field(os.path.join(folder(cg), "cpu.stat"), "usage_usec") / 1e6, 3)
    return out


def since(cg, before):
    """counters(cg) less the events counted in before (a kept child's
    earlier jobs)."""
    now = counters(cg)
    if now is None or not before:
        return now
    for k in ("forks_refused", "oom_kills"):
        if k in now:
            now[k] = max(now[k] - before.get(k, 0), 0)
    return now


# ---------------------------------------------------------------- freeze

class _Freezer:
    """A cgroup's freezer: the file that asks for a state, the values that
    ask for frozen and thawed, and the file whose lines say which it is."""

    def __init__(self, control, frozen, thawed, state, frozen_line, thawed_lines):
        self.control, self.frozen, self.thawed = control, frozen, thawed
        self.state, self.frozen_line, self.thawed_lines = state, frozen_line, thawed_lines

    def is_frozen(self, lines):
        return self.frozen_line in lines

    def is_thawed(self, lines):
        # v2 says "frozen 0" (no "frozen 1"); v1's state is exactly THAWED,
        # never FREEZING.
        return not self.is_frozen(lines) and (self.thawed_lines is None or lines == self.thawed_lines)


def _freezer(cg):
    """cg's _Freezer, or None without one."""
    if cg is None:
        return None
    if cg["version"] == 1:
        if "freezer" not in cg["dirs"]:
            return None
        state = os.path.join(cg["dirs"]["freezer"], "freezer.state")
        return _Freezer(state, "FROZEN", "THAWED", state, "FROZEN", ["THAWED"])
    return _Freezer(os.path.join(folder(cg), "cgroup.freeze"), "1", "0", os.path.join(folder(cg), "cgroup.events"),
                    "frozen 1", None)


def _until(path, done, wait_s, step):
    """Reads path every step seconds until done(its lines): True then;
    False once wait_s has passed or it cannot be read."""
    end = time.monotonic() + wait_s
    while True:
        try:
            if done(_read(path).splitlines()):
                return True
        except OSError:
            return False
        if time.monotonic() > end:
            return False
        time.sleep(step)


def freeze(cg, wait_s=1.0):
    """Freezes every process of cg at once (v1's freezer, v2's
    cgroup.freeze): one forked while the judge stops the jail is frozen as
    it is born. True once the kernel says all are frozen; False without a
    freezer, or when they did not settle within wait_s (a process in an
    uninterruptible wait: the freeze stays asked for, thaw ends it)."""
    fz = _freezer(cg)
    if fz is None:
        return False
    try:
        _write(fz.control, fz.frozen)
    except OSError:
        return False
    return _until(fz.state, fz.is_frozen, wait_s, 0.001)


def thaw(cg, wait_s=0.2):
    """Ends freeze(cg), and waits (up to wait_s) until the kernel no longer
    counts cg frozen, so that what is timed next is not the thaw."""
    fz = _freezer(cg)
    if fz is None:
        return
    try:
        _write(fz.control, fz.thawed)
    except OSError:
        return
    _until(fz.state, fz.is_thawed, wait_s, 0.0005)


def cpu_ns(cg):
    """CPU time of every process cg ever held (those that exited count),
    in ns; None where the host keeps no such account."""
    if cg is None:
        return None
    if cg["version"] == 1:
        if "cpuacct" not in cg["dirs"]:
            return None
        path = os.path.join(cg["dirs"]["cpuacct"], "cpuacct.usage")
        return _number(path) if os.path.exists(path) else None
    path = os.path.join(folder(cg), "cpu.stat")
    return _field(path, "usage_usec") * 1000 if os.path.exists(path) else None


# ---------------------------------------------------------------- kill, remove

def members(cg):
    """The pids of cg's processes (as this process's PID namespace names
    them), [] when none, gone or cg is None (no cgroup)."""
    if cg is None:
        return []
    try:
        return [int(x) for x in _read(os.path.join(folder(cg), "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def _kill(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def kill(cg, spare=()):
    """Kills every process in cg but spare: v2's cgroup.kill where there
    is one, else frozen first (v1's freezer, v2's cgroup.freeze) so that
    nothing forks while the list is read, then killed and thawed; without
    a freezer, killed until none is left (a few rounds at most). Returns
    how many were signalled."""
    if cg is None:
        return 0
    spare = set(spare)
    if not spare and cg["version"] == 2 and os.path.exists(os.path.join(folder(cg), "cgroup.kill")):
        n = len(members(cg))
        try:
            _write(os.path.join(folder(cg), "cgroup.kill"), "1")
            return n
        except OSError:
            pass
    freeze = _freezer(cg)
    frozen = False
    if freeze and not spare:
        try:
            _write(freeze.control, freeze.frozen)
            frozen = True
        except OSError:
            pass
    signalled = set()
    try:
        for _ in range(50):
            left = [p for p in members(cg) if p not in spare]
            # Frozen, a killed process stays listed until it is thawed:
            # the rounds end when no new one appears (one that forked
            # before it froze); unfrozen, when none is left.
            new = [p for p in left if p not in signalled] if frozen else left
            if not new:
                break
            _kill(new)
            signalled.update(new)
            if not frozen:
                time.sleep(0.002)
    finally:
        if frozen:
            try:
                _write(freeze.control, freeze.thawed)  # the killed die once thawed
            except OSError:
                pass
    return len(signalled)


def _rmdirs(cg):
    """Removes cg's folders; True when none is left."""
    gone = True
    for d in sorted(set(cg["dirs"].values())):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            gone = False
    return gone


def exists(cg):
    return cg is not None and any(os.path.isdir(d) for d in cg["dirs"].values())


def release(cg, wait_s=0.0):
    """Kills what is left in cg and removes it. Returns (counters before,
    gone): counters None when there was no such cgroup; gone False when a
    killed process has not left yet (call again: the worker's loop does,
    rather than wait here, unless wait_s)."""
    if not exists(cg):
        return None, True
    before = counters(cg)
    deadline = time.monotonic() + wait_s
    while True:
        kill(cg)
        if _rmdirs(cg):
            return before, True
        if time.monotonic() >= deadline:
            return before, False
        time.sleep(0.01)


def clean_stale():
    """Removes the cgroups of workers of this PID namespace that are gone
    (a crashed worker's), killing what is left in them. Returns how many."""
    lay, _ = layout()
    if lay is None:
        return 0
    ns = _worker_name().split(".")[0]
    stale = set()
    for d in set(lay["dirs"].values()):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            parts = n[len(PREFIX):].split(".") if n.startswith(PREFIX) else ()
            if len(parts) != 4 or parts[0] != ns or not parts[3].startswith("c"):
                continue  # not a job cgroup, or another PID namespace's: its pids mean nothing here
            try:
                if _start_time(int(parts[1])) == int(parts[2]):
                    continue  # that worker is alive
            except (ValueError, OSError, IndexError):
                pass
            stale.add(n)
    removed = 0
    for n in sorted(stale):
        cg = _named(lay, n)
        if release(cg, wait_s=1.0)[1]:
            removed += 1
    return removed

"""The jail of a process a profiler launches.

Nsight Compute, rocprofv3 and perf start the process they profile, so a
profile cannot be a fork of the warm worker (whose children enter their jail
from the fork). The profile driver enters the same jail itself, first
thing, before it imports torch or reads a candidate: the job's view of the
filesystem with a private /tmp and /dev/shm, a PID namespace whose init it
is inside a cgroup or, under a profiler that injects itself, the cgroup
alone (what the candidate starts dies with either), its own folder the only
one it writes, an unprivileged uid, no capabilities, Landlock and seccomp. The
shared build caches are read-only to it, as to an evaluation's candidate:
its load_inline loads what the harness's build step made (kevolve/_extcache.py)
or builds in its own folder.

Two layers differ from an evaluation's, each for the profiler's sake:

  network       under a profiler that injects itself (Nsight Compute,
                rocprofv3) the injected library reports to the profiler's
                front end over a local socket, so the process keeps the
                host's network (its namespace and TCP); under perf and
                CUPTI it has none.
  capabilities  where the NVIDIA driver gives GPU performance counters to
                admins only (RmProfilingAdminOnly, the module option
                NVreg_RestrictProfilingToAdminUsers), the process keeps
                CAP_SYS_ADMIN alone, with the calls that capability opens
                (mounts, swap, BPF, ...) refused by seccomp; elsewhere it
                keeps none.
"""
import os
import sys

from sandbox import jail
from sandbox import layers

PARAMS = "/proc/driver/nvidia/params"


def counters_admin_only(params=PARAMS):
    """Whether the NVIDIA driver lets only admins read GPU counters."""
    try:
        with open(params) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "RmProfilingAdminOnly":
                    return value.strip() == "1"
    except OSError:
        pass
    return False


def _pid_namespace(deadline_s):
    """Forks this process into a PID namespace whose init it is, inside a
    cgroup of its own where the host makes one (its process limit and
    memory account, as an evaluation's); the caller's side becomes the
    keeper (_keep_cgroup) and never returns. ((ok, detail) of the
    namespace, (ok, detail) of the cgroup). Where no namespace can be
    made, the cgroup alone holds the process (_cgroup)."""
    from sandbox import cgroup
    cgroup.prepare(clean=False)  # names the keeper, whose name the cgroup carries
    cg, cg_why = cgroup.make(os.getpid(), 0)
    pid, why = jail.fork_jailed()
    if pid is None:
        cgroup.release(cg)
        return (False, why), _cgroup(deadline_s)
    if pid:
        _keep_cgroup(pid, cg, deadline_s)
    cg_rep = cgroup.join(cg) if cg is not None else (False, cg_why)
    ok, proc = jail.enter_own_proc()
    layers.set_pdeathsig()
    layers.set_subreaper()  # as the namespace's init it reaps orphans anyway; the report asks
    return (ok, why + "; " + proc), cg_rep


def _cgroup(deadline_s):
    """Forks this process into a cgroup of its own; the caller's side
    stays outside as the keeper (_keep_cgroup) and never returns.
    (ok, detail) of the cgroup; where the host makes none, this process
    runs as it is."""
    from sandbox import cgroup
    lay, why = cgroup.layout()
    if lay is None:
        return False, why
    cgroup.prepare(clean=False)  # names the keeper, whose name the child's cgroup carries
    layers.set_subreaper()  # what the child leaves is reparented to the keeper, which reaps it
    pid = os.fork()
    if pid:
        _keep_cgroup(pid, cgroup.handle(pid), deadline_s)
    layers.set_pdeathsig()
    layers.set_subreaper()  # not inherited
    cg, why = cgroup.make(os.getpid(), 0)
    return cgroup.join(cg) if cg is not None else (False, why)


def _keep_cgroup(pid, cg, deadline_s):
    """Waits for the child pid (killing its cgroup cg at deadline_s, when
    given), reaping the orphans it leaves meanwhile; then kills whatever
    is left in cg, removes it, reaps the last and ends as the child did.
    cg None (a host that makes no cgroup): the child's own end, and its
    PID namespace's where it has one, is all there is to wait for."""
    import json
    import time
    from sandbox import cgroup
    end = time.monotonic() + deadline_s if deadline_s > 0 else None
    status = None
    while status is None:
        status = _reap(pid)
        if status is None and end is not None and time.monotonic() > end:
            end = None
            cgroup.kill(cg)
            print(json.dumps({"error": "the profiled process ran past its %.0f s and was killed" % deadline_s}), flush=True)
        time.sleep(0.02)
    cgroup.release(cg, wait_s=2.0)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            if not os.waitpid(-1, os.WNOHANG)[0]:
                time.sleep(0.01)
        except ChildProcessError:
            break
    jail.exit_as(status)


def _reap(pid):
    """Reaps every child that has ended; returns pid's status if it was
    one of them, else None (an exit status of 1 where no child is left)."""
    found = None
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found if found is not None else 1 << 8
        if not done:
            return found
        if done == pid:
            found = status


# What holds the processes of a profiled process: Nsight Compute never
# finished profiling one that is the init of a PID namespace (it waited
# out every deadline on the H200; the same process outside the namespace
# was profiled in 8 s), so an injecting profiler's process is held by a
# cgroup instead, as a GPU evaluation's is.
CGROUP_INSTEAD = ("its cgroup: every process it starts stays in it (no clone(CLONE_PARENT) or setsid leaves it), "
                  "and all are killed and the cgroup removed when it ends")


def enter(work, reads, counters=False, by_cgroup=False, network=True, deadline_s=0):
    """Enters the jail (see the module's docstring). work: the process's own
    folder, the only one it writes; reads: the files and folders it reads
    (the driver, the harness's py dir, the reference and the candidate);
    counters: it reads the GPU's performance counters (Nsight Compute);
    by_cgroup: a cgroup holds its processes rather than a PID namespace
    (an injecting profiler's process: CGROUP_INSTEAD); network: it keeps
    the host's network (its namespace and TCP) for its profiler;
    deadline_s: when its cgroup's processes are killed (the caller's
    deadline ends the rest).
    Returns the sandbox's report, as layers.enter does."""
    if os.environ.get("KEVOLVE_SANDBOX") == "0":
        return {"active": [], "missing": {"all": "disabled by KEVOLVE_SANDBOX=0"}, "detail": {}}
    size = jail.scratch_bytes(0)
    view = jail.enter_view(jail.default_needs(list(reads)), [work], size, size)
    if by_cgroup:
        ns, cg = (False, "an injecting profiler's process: " + CGROUP_INSTEAD), _cgroup(deadline_s)
    else:
        ns, cg = _pid_namespace(deadline_s)
    os.environ.update(layers.private_env(work))
    os.chdir(work)
    admin = counters and os.geteuid() == 0 and counters_admin_only()
    rep = layers.enter(work, need_reachable=list(reads) + [sys.executable, sys.prefix], network=network,
                       view=view, pidns=ns, keep_admin=admin, cgroup=cg)
    if network:
        # Not missing: taken out for the profiler (the module's docstring).
        rep["missing"].pop("netns", None)
        rep.setdefault("kept", {})["netns"] = "the profiler's injected library reports to its front end over a local socket"
    if by_cgroup and cg[0]:
        rep.setdefault("replaced", {})["pidns"] = CGROUP_INSTEAD
    return rep


def probe(by_cgroup):
    """Enters the jail as a profile driver does (by_cgroup: as under an
    injecting profiler) in a throwaway child over a temporary folder, checks
    that its own folder is the only one it writes, and prints the report as
    JSON (kevolve-mcp doctor)."""
    import json
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="kevolve-profile-probe-")
    work, outside = os.path.join(base, "work"), os.path.join(base, "outside")
    os.makedirs(work)
    os.makedirs(outside)
    os.chmod(base, 0o711)
    os.chmod(outside, 0o777)  # any uid may write it: only the jail keeps the process out
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the worker's folder, above sandbox/

    def child():
        # The cgroup's jail is an injecting profiler's: the one that keeps the network.
        # The outside folder is in its view (read), as the reference and candidate are.
        rep = enter(work, [here, outside], by_cgroup=by_cgroup, network=by_cgroup, deadline_s=30)
        rep["writable"] = [name for name, d in (("own folder", work), ("outside it", outside))
                           if layers.can_write(os.path.join(d, "probe"))]
        return rep

    _, rep = layers.in_throwaway(child)
    shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(rep))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        probe("--cgroup" in sys.argv[2:])

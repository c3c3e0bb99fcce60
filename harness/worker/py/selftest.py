"""Jobs that exercise the worker itself (used by the Go tests of package
worker): printing, progress, the gate, sleeping, crashing, allocating."""
import os
import sys
import time

from sandbox import jail


def echo(args, ctx):
    print("hello from the child on stdout")
    print("and on stderr", file=sys.stderr)
    ctx.progress("echo", 1, 1)
    ppid, pgid = jail.host_parent_and_group()
    return {"args": args, "pid": jail.host_pid(), "ppid": ppid, "pgid": pgid, "jailed": jail.in_own_namespace()}


def gated(args, ctx):
    t0 = time.monotonic()
    ctx.gate()
    return {"waited_s": time.monotonic() - t0}


def sleep(args, ctx):
    time.sleep(float(args.get("s", 3600)))
    return {}


def progress_then_hang(args, ctx):
    """Reports two stages, the second with figures (a later event's key
    replacing the earlier's), one event too big for its figures, then hangs
    for the deadline to end it."""
    ctx.progress("trials", 2, 5)
    ctx.progress("timed", 3, 0, {"candidate": {"iters": 3}})
    ctx.progress("timed", 4, 0, {"candidate": {"iters": 4}, "reference": {"iters": 1}})
    ctx.progress("timed", 5, 0, {"huge": "x" * 5000})
    time.sleep(3600)
    return {}


def spawn_and_sleep(args, ctx):
    """A grandchild in the same process group must die with the child."""
    import subprocess
    # Found by its argument: in the jail this process cannot name the
    # host's pid of its children.
    subprocess.Popen(["sleep", str(args["tag"])])
    with open(os.path.join(args["dir"], "grandchild.started"), "w") as f:
        f.write(str(args["tag"]))
    time.sleep(3600)
    return {}


def segfault(args, ctx):
    import ctypes
    ctypes.string_at(0)
    return {}


def allocate(args, ctx):
    b = bytearray(int(args["bytes"]))
    return {"len": len(b)}


def forge_then_exit(args, ctx):
    """Writes a result file as the job function would, then ends the
    process without reporting it (what a forging candidate does)."""
    # The sandbox lets no one open the judge's files by name; the fd the
    # harness opened before it is there to find.
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.endswith(os.path.join("judge", "result.json")):
            os.pwrite(int(fd), b'{"verdict": "pass"}', 0)
    os._exit(0)


def empty_after_done(args, ctx):
    """Returns its result while a thread of its own keeps truncating the
    result file through the harness's fd: after the job function wrote it
    and reported "done", the file Go reads is empty."""
    import threading
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd).endswith(os.path.join("judge", "result.json")):
                fds.append(int(fd))
        except OSError:
            continue

    def truncate():
        end = time.monotonic() + 5
        while time.monotonic() < end:
            for fd in fds:
                try:
                    os.ftruncate(fd, 0)
                except OSError:
                    pass

    threading.Thread(target=truncate, daemon=True).start()
    return {"verdict": "genuine"}


def raise_error(args, ctx):
    raise ValueError("job failed on purpose")


def big(args, ctx):
    return {"s": "x" * int(args["n"])}


def source_len(args, ctx):
    """Stands for an evaluation of a big candidate: the job only measures
    what it was handed."""
    return {"len": len(args.get("code") or "")}


def spawn_marked(args, ctx):
    """Starts a grandchild that carries the job's environment (and so the
    test's marker), then sleeps: an early-deadline test scans /proc for it."""
    import subprocess
    subprocess.Popen(["sleep", "3600"])
    time.sleep(3600)
    return {}


def ungated(args, ctx):
    """Hands the device back, then keeps the child busy: the device must be
    free while the job has not yet returned."""
    ctx.gate()
    ctx.ungate()
    time.sleep(float(args.get("s", 1)))
    return {"pid": jail.host_pid()}


def staged(args, ctx):
    """Stages before, in and after the device phase, each sleeping its
    seconds (load, work, after), as an evaluation's do."""
    ctx.progress("load")
    time.sleep(float(args.get("load", 0.2)))
    ctx.progress("wait_device")
    ctx.gate()
    ctx.progress("work")
    time.sleep(float(args.get("work", 0.3)))
    ctx.ungate()
    ctx.progress("after")
    time.sleep(float(args.get("after", 0.2)))
    return {"pid": jail.host_pid()}


def done_then_hang(args, ctx):
    """Reports done (as the worker does after writing result.json) and never
    exits: a child stuck in its teardown must still be killed."""
    import __main__
    __main__.child_emit({"event": "done", "id": ctx.job_id})
    time.sleep(3600)
    return {}


def reusable(args, ctx):
    """Declares itself clean (or not, with clean=False): the child may serve
    the next job with the same environment. s: seconds to sleep first (jobs
    that overlap run in children of their own)."""
    time.sleep(float(args.get("s", 0)))
    ctx.reusable = bool(args.get("clean", True))
    return {"pid": jail.host_pid(), "job_index": ctx.job_index, "env": os.environ.get("KV_TEST_KEY", "")}


def swap_result_fd(args, ctx):
    """Forges a result through the harness's fd, then puts its own file
    in that fd's place so the harness's real result would land there."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.endswith(os.path.join("judge", "result.json")):
            os.pwrite(int(fd), b'{"verdict": "pass"}', 0)
            own = os.open(os.path.join(ctx.work_dir, "decoy.json"), os.O_RDWR | os.O_CREAT, 0o644)
            os.dup2(own, int(fd))
    return {"verdict": "incorrect"}


def append_file(args, ctx):
    """Appends a line to a file, making it writable first as its owner can:
    what a candidate that edits the judge's files does."""
    os.chmod(args["path"], 0o644)
    with open(args["path"], "a") as f:
        f.write(args["line"])
    return {}


def spin_cpu(args, ctx):
    """Burns cpu_s seconds of CPU time on one CPU (the load test pins
    competing spinners there): its wall time is mostly waiting for the CPU."""
    os.sched_setaffinity(0, {int(args["cpu"])})
    t0, end = time.monotonic(), time.process_time() + float(args["cpu_s"])
    while time.process_time() < end:
        pass
    return {"wall_s": time.monotonic() - t0}


def build_under_load(args, ctx):
    """A build stage whose compilers come and go: `procs` processes run
    one after the other, each burning cpu_s seconds of CPU on one CPU (the
    test pins spinners there), as a build's compiler invocations do. Each
    has exited before the next starts, so the tree's live processes never
    show the wait the build lost (issue 32, item 6)."""
    import subprocess
    import sys
    os.sched_setaffinity(0, {int(args["cpu"])})
    ctx.progress(args.get("stage", "load_candidate"))
    t0 = time.monotonic()
    burn = "import time\nend = time.process_time() + %f\nwhile time.process_time() < end: pass\n" % float(args["cpu_s"])
    for _ in range(int(args["procs"])):
        subprocess.run([sys.executable, "-S", "-c", burn], check=True)
    ctx.progress("after")
    return {"wall_s": time.monotonic() - t0}

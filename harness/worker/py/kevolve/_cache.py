"""On-disk cache of compiled objects, keyed by a content hash."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import tempfile
from functools import lru_cache


class CompileError(RuntimeError):
    """A kernel source failed to compile. `log` holds the compiler output."""

    def __init__(self, message: str, log: str = "", command: list[str] | None = None):
        self.log = log
        self.command = command or []
        text = message if not log else f"{message}\n{log.rstrip()}"
        super().__init__(text)


def cache_dir(sub: str) -> str:
    root = os.environ.get("KEVOLVE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kevolve", "kernels")
    d = os.path.join(root, sub)
    os.makedirs(d, exist_ok=True)
    return d


def digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, (list, tuple)):
            p = "\x1f".join(map(str, p))
        h.update(str(p).encode())
        h.update(b"\x1e")
    return h.hexdigest()[:32]


def write_atomic(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def run_bounded(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, capture_output=True, text=True) in a process
    group of its own, all of which is killed at the deadline (a compiler
    driver's cc1plus outlives a kill of the driver alone); raises
    subprocess.TimeoutExpired then."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.communicate()
            raise
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@lru_cache(maxsize=None)
def tool_version(exe: str, *args: str) -> str:
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unknown ({e})"


@lru_cache(maxsize=None)
def host_cpu() -> str:
    """What -march=native depends on: the CPU model and its flags."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return os.uname().machine
    keep = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags", "Features"))]
    return "\n".join(sorted(set(keep)))

"""load_c: compile a C source with gcc into a shared object and call its
functions on CPU tensors through ctypes."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time

from . import _args
from ._cache import CompileError, cache_dir, digest, host_cpu, tool_version, write_atomic
from ._sig import Function, c_functions

BASE_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]

_RESTYPES = {
    "void": None, "float": ctypes.c_float, "double": ctypes.c_double,
}


def _restype(fn: Function):
    if fn.ret_pointer:
        return ctypes.c_void_p
    if fn.ret in _RESTYPES:
        return _RESTYPES[fn.ret]
    spec = _args.SCALARS.get(fn.ret)
    if spec and spec[1] in ("int", "bool"):
        return spec[0]
    return None


def _profiling() -> bool:
    """Whether torch.profiler is recording (a module attribute: cheap)."""
    p = sys.modules.get("torch.autograd.profiler")
    return p is not None and bool(getattr(p, "_is_profiler_enabled", False))


class CFunction:
    def __init__(self, lib: ctypes.CDLL, fn: Function):
        self.sig = fn
        self._f = getattr(lib, fn.name)
        self._f.restype = _restype(fn)
        self._f.argtypes = None  # we pass ctypes instances, already typed

    def __call__(self, *args):
        vals, _ = _args.convert(self.sig, args, "cpu")
        if _profiling():
            # A ctypes call is invisible to torch.profiler: name it, so a
            # CPU profile shows the C kernel and not only the aten ops
            # around it. Only while a profiler runs: timing pays nothing.
            import torch.profiler
            with torch.profiler.record_function("kevolve::c::" + self.sig.name):
                return self._f(*vals)
        return self._f(*vals)

    def __repr__(self):
        return f"<kevolve C function {self.sig.signature()}>"


class CModule:
    """The loaded library: each parsed function is an attribute."""

    def __init__(self, path: str, funcs: dict[str, Function], compile_seconds: float, cached: bool):
        self.path = path
        self.compile_seconds = compile_seconds
        self.cached = cached
        self._lib = ctypes.CDLL(path)
        self._funcs = {name: CFunction(self._lib, f) for name, f in funcs.items()}

    @property
    def functions(self) -> list[str]:
        return list(self._funcs)

    def __getattr__(self, name):
        funcs = self.__dict__.get("_funcs", {})
        if name in funcs:
            return funcs[name]
        raise AttributeError(f"no non-static function '{name}' in the C source; found: {sorted(funcs) or 'none'}")

    __getitem__ = __getattr__


def _cc() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise CompileError("no C compiler found: install gcc (e.g. apt-get install gcc) or set CC")
    return cc


def load_c(src: str, *, flags=()) -> CModule:
    """Compile src with gcc -O3 -march=native -fopenmp -shared -fPIC (+flags),
    cached by content, and return a module whose attributes call its functions."""
    funcs = c_functions(src)
    cc = _cc()
    flags = [str(f) for f in flags]
    key = digest("c", src, flags, BASE_FLAGS, tool_version(cc, "--version"), host_cpu())
    d = cache_dir("c")
    so = os.path.join(d, key + ".so")
    if os.path.exists(so):
        return CModule(so, funcs, 0.0, True)
    csrc = os.path.join(d, key + ".c")
    write_atomic(csrc, src.encode())
    tmp = os.path.join(d, f".{key}.{os.getpid()}.so")
    cmd = [cc, *BASE_FLAGS, "-o", tmp, csrc, *flags, "-lm"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CompileError(f"gcc failed (exit {r.returncode})", (r.stdout + r.stderr).replace(csrc, "kernel.c"), cmd)
    os.replace(tmp, so)
    return CModule(so, funcs, dt, False)

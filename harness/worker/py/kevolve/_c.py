"""load_c: compile a C source with gcc into a shared object and call its
functions on CPU tensors through ctypes."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time

from . import _args, _fastcall
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
    """One C function. Calls go through a checker made for its signature
    at load time (_fastcall); what it does not take goes through
    _args.convert, which converts it or raises."""

    def __init__(self, lib: ctypes.CDLL, fn: Function):
        self.sig = fn
        self._f = getattr(lib, fn.name)
        self._f.restype = _restype(fn)
        self._f.argtypes = _fastcall.argtypes(fn)

    def _slow(self, args):
        vals, _ = _args.convert(self.sig, args, "cpu")
        if _profiling():
            # A ctypes call is invisible to torch.profiler: name it, so a
            # CPU profile shows the C kernel and not only the aten ops
            # around it. Only while a profiler runs: timing pays nothing.
            import torch.profiler
            with torch.profiler.record_function("kevolve::c::" + self.sig.name):
                return self._f(*vals)
        return self._f(*vals)

    def __call__(self, *args):
        return self._slow(args)

    def __repr__(self):
        return f"<kevolve C function {self.sig.signature()}>"


def _function(lib: ctypes.CDLL, fn: Function) -> CFunction:
    """A CFunction whose class calls through fn's fast path: special
    methods are looked up on the type, so each function gets a subclass."""
    f = CFunction(lib, fn)
    fast = _fastcall.fast_call(fn, f._f, CFunction._slow)
    if fast is not None:
        f.__class__ = type("CFunction", (CFunction,), {"__call__": fast, "__slots__": ()})
    return f


class _Library(ctypes.CDLL):
    """The loader's own handle on a library: its calls are counted where
    the loader's module is (evaluate.guards.hooks), not again as a ctypes call."""

    _kv_loader = True


# Every library load_c returned in this process, by real path: code built
# from a source a candidate gave (evaluate.guards.native counts a ctypes call
# into one as the candidate's own kernel; the harness clears it per job).
loaded_libraries: set[str] = set()


class CModule:
    """The loaded library: each parsed function is an attribute."""

    def __init__(self, path: str, funcs: dict[str, Function], compile_seconds: float, cached: bool):
        self.path = path
        self.compile_seconds = compile_seconds
        self.cached = cached
        self._lib = _Library(path)
        self._funcs = {name: _function(self._lib, f) for name, f in funcs.items()}
        loaded_libraries.add(os.path.realpath(path))
        # Functions as plain attributes where no attribute of the module has
        # the name: m.scale is then a dict hit, not a __getattr__ call.
        for name, f in self._funcs.items():
            if not hasattr(type(self), name) and name not in self.__dict__:
                self.__dict__[name] = f

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

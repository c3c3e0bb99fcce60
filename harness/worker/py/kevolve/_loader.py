"""What load_cuda and load_hip share: a source compiled by the vendor's
runtime compiler (NVRTC, hiprtc: the same C API under two prefixes) or its
offline one (nvcc, hipcc), cached on disk by content and in this process by
key, then loaded per device and launched by kernel name through the vendor's
module API on ctypes. _cuda.py and _hip.py name the vendor's libraries,
calls and defaults; the protocol is here, so the two cannot drift apart."""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
import time
from typing import Callable

from . import _args
from ._cache import CompileError, cache_dir, digest, write_atomic
from ._sig import Function


def dim3(v, what: str) -> tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise TypeError(f"{what} must be 1 to 3 positive ints, got {v}")
    return v + (1,) * (3 - len(v))


def first_library(cands, entry: str):
    """The first of cands that loads and has entry (the call that tells a
    usable compiler library from a stub), or None."""
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
            getattr(lib, entry)
        except (OSError, AttributeError):
            continue
        return lib
    return None


class Lazy:
    """One value made on first use, once, under a lock: a vendor library is
    loaded (and initialised) once per process, from whichever thread asks."""

    def __init__(self, make: Callable):
        self._make = make
        self._value = None
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            if self._value is None:
                self._value = self._make()
        return self._value


# ------------------------------------------------------------------ compile

def rtc_compile(lib, api: str, label: str, src: str, filename: bytes, opts: list[str], arch: str,
                code: str, empty: str | None = None) -> bytes:
    """Compile src in-process: api is the calls' prefix (nvrtc, hiprtc),
    label how the compiler is named in errors, code the output's name in the
    calls (CUBIN, Code). empty, when given, is the error for an empty output."""
    def call(name):
        return getattr(lib, api + name)

    def err(r):
        return call("GetErrorString")(r).decode()

    prog = ctypes.c_void_p()
    r = call("CreateProgram")(ctypes.byref(prog), src.encode(), filename, 0, None, None)
    if r:
        raise CompileError(f"{api}CreateProgram failed: {err(r)}")
    try:
        copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        r = call("CompileProgram")(prog, len(opts), copts)
        size = ctypes.c_size_t()
        call("GetProgramLogSize")(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        call("GetProgramLog")(prog, buf)
        log = buf.value.decode(errors="replace")
        if r:
            raise CompileError(f"{label} compile failed for {arch}: {err(r)}", log, [api, *opts])
        call(f"Get{code}Size")(prog, ctypes.byref(size))
        if size.value == 0 and empty:
            raise CompileError(empty, log)
        out = ctypes.create_string_buffer(size.value)
        call(f"Get{code}")(prog, out)
        return out.raw
    finally:
        call("DestroyProgram")(ctypes.byref(prog))


def tool_compile(tool: str, kind: str, key: str, src: str, src_ext: str, out_ext: str, arch: str,
                 argv: Callable[[str, str], list[str]], timeout: float | None = None) -> bytes:
    """Compile src with an offline compiler: the source is written to the
    cache (kind) as key+src_ext, argv(out, source path) is the command, and
    the log names the source kernel+src_ext, as the caller wrote none."""
    d = cache_dir(kind)
    path = os.path.join(d, key + src_ext)
    write_atomic(path, src.encode())
    out = os.path.join(d, f".{key}.{os.getpid()}{out_ext}")
    cmd = argv(out, path)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"{tool} timed out after {e.timeout}s for {arch}", "", cmd) from e
    if r.returncode != 0:
        raise CompileError(f"{tool} failed for {arch} (exit {r.returncode})",
                           (r.stdout + r.stderr).replace(path, "kernel" + src_ext), cmd)
    with open(out, "rb") as f:
        data = f.read()
    os.unlink(out)
    return data


class Backend:
    """One compiler of a vendor: its name (part of the cache key), its
    version (too) and how it turns (src, arch, flags, key) into an image."""

    def __init__(self, name: str, version: Callable[[], str], compile: Callable[[str, str, list, str], bytes]):
        self.name, self.version, self.compile = name, version, compile


def build(kind: str, ext: str, src: str, arch: str, flags: list[str], backends: list[Backend], loaded: dict,
          make: Callable, fallback: Callable[[CompileError], bool], disk_cache: bool = True):
    """The module of src from the first backend that builds it: from this
    process's modules (loaded), else the disk cache, else compiled. A
    backend's CompileError goes to the next backend when fallback(error)
    says the next one may succeed (the runtime compilers lack host headers);
    otherwise it is raised. make(image, backend, path, cached, seconds)
    wraps the image. disk_cache=False neither reads nor writes the disk
    cache: the harness's own kernels, which must not come from a file a
    candidate could have written."""
    errors: list[CompileError] = []
    for i, b in enumerate(backends):
        key = digest(kind, b.name, src, arch, flags, b.version())
        if disk_cache and key in loaded:
            return loaded[key]
        path = os.path.join(cache_dir(kind), key + ext) if disk_cache else ""
        cached = disk_cache and os.path.exists(path)
        t0 = time.perf_counter()
        try:
            if cached:
                with open(path, "rb") as f:
                    image = f.read()
            else:
                image = b.compile(src, arch, flags, key)
                if disk_cache:
                    write_atomic(path, image)
        except CompileError as e:
            errors.append(e)
            if i + 1 < len(backends) and fallback(e):
                continue
            raise
        mod = make(image, b.name, path, cached, 0.0 if cached else time.perf_counter() - t0)
        if disk_cache:
            loaded[key] = mod
        return mod
    raise errors[-1]


# ------------------------------------------------------------------- launch

class Api:
    """A vendor's module API on ctypes. Subclasses load the library and
    implement the calls; each raises a RuntimeError naming what failed."""

    vendor = ""

    def error_string(self, r: int) -> str:
        raise NotImplementedError

    def check(self, r: int, what: str):
        if r:
            raise RuntimeError(f"{what} failed: {self.vendor} error {r} ({self.error_string(r) or 'unknown'})")

    def ensure_context(self, dev: int):
        """Make dev's context current where the API needs one (CUDA's driver)."""

    def load(self, image: bytes, what: str) -> ctypes.c_void_p:
        raise NotImplementedError

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        raise NotImplementedError

    def allow_dynamic_shared(self, f: ctypes.c_void_p, nbytes: int, name: str):
        """Let f take nbytes of dynamic shared memory where the API asks for
        an opt-in (CUDA above 48 KiB)."""

    def launch(self, f, g, b, shared_mem: int, stream: int, params) -> int:
        raise NotImplementedError


class LaunchSkipped(RuntimeError):
    """A launch inside skip_launches(): the harness's warm-up call stops
    here, its source compiled and its module loaded, nothing run."""


# Set by skip_launches(): the harness builds what a candidate's first call
# would build before the device phase, and none of its kernels may run
# then, beside another evaluation's timed calls.
_SKIP_LAUNCHES = threading.local()


class skip_launches:
    """While active (in this thread), a launch of a kernel whose module may
    skip (a candidate's) raises LaunchSkipped instead of running."""

    def __enter__(self):
        _SKIP_LAUNCHES.on = True

    def __exit__(self, *exc):
        _SKIP_LAUNCHES.on = False
        return False


class Kernel:
    """One extern "C" __global__ kernel of a Module, launched on torch
    tensors on torch's current stream (or stream=)."""

    label = ""  # the vendor, for repr

    def __init__(self, module: "Module", fn: Function):
        self.module = module
        self.sig = fn
        self._funcs: dict[int, ctypes.c_void_p] = {}
        self._max_dyn: dict[int, int] = {}

    def _function(self, dev: int) -> ctypes.c_void_p:
        f = self._funcs.get(dev)
        if f is None:
            f = self.module.api().function(self.module._module(dev), self.sig.name)
            self._funcs[dev] = f
        return f

    def __call__(self, *args, grid, block, shared_mem: int = 0, stream=None):
        # torch's ROCm build calls its GPU tensors "cuda" too: one conversion.
        vals, dev = _args.convert(self.sig, args, "cuda")
        g, b = dim3(grid, "grid"), dim3(block, "block")
        self.module.check_launchable()
        import torch
        if dev is None:
            dev = torch.cuda.current_device()
        with torch.cuda.device(dev):
            if stream is None:
                stream = torch.cuda.current_stream(dev)
            handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
            api = self.module.api()
            api.ensure_context(dev)
            f = self._function(dev)
            if getattr(_SKIP_LAUNCHES, "on", False) and self.module.may_skip:
                raise LaunchSkipped(f"{self.sig.name}: launch skipped (the harness's warm-up: compiled and loaded)")
            if shared_mem > 48 * 1024 and self._max_dyn.get(dev, 0) < shared_mem:
                api.allow_dynamic_shared(f, shared_mem, self.sig.name)
                self._max_dyn[dev] = shared_mem
            ptrs = (ctypes.c_void_p * max(1, len(vals)))(
                *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
            r = api.launch(f, g, b, int(shared_mem), handle, ptrs)
            if r:
                api.check(r, f"launching {self.sig.name} grid={g} block={b} shared_mem={shared_mem}")

    def __repr__(self):
        return f"<kevolve {self.label} kernel {self.sig.signature()}>"


class Module:
    """A compiled source: each extern "C" __global__ kernel is an attribute.
    Subclasses set api (a Lazy of their Api), kernel_class and what a
    failed load says (load_what)."""

    api: Lazy
    kernel_class = Kernel
    may_skip = True  # False for the harness's own kernels (evaluate.compare.fastcmp), which always launch

    def __init__(self, image: bytes, kernels: dict[str, Function], mangled: list[str], *, backend: str,
                 arch: str, compile_seconds: float, cached: bool, path: str):
        self.backend = backend
        self.arch = arch
        self.compile_seconds = compile_seconds
        self.cached = cached
        self.path = path
        self._image = image
        self._mangled = mangled
        self._modules: dict[int, ctypes.c_void_p] = {}
        self._kernels = {n: self.kernel_class(self, f) for n, f in kernels.items()}

    @property
    def kernels(self) -> list[str]:
        return list(self._kernels)

    def check_launchable(self):
        """Raise when this torch cannot launch the module's kernels."""

    def load_what(self, dev: int) -> str:
        raise NotImplementedError

    def _module(self, dev: int) -> ctypes.c_void_p:
        m = self._modules.get(dev)
        if m is None:
            m = self.api().load(self._image, self.load_what(dev))
            self._modules[dev] = m
        return m

    def __getattr__(self, name):
        ks = self.__dict__.get("_kernels", {})
        if name in ks:
            return ks[name]
        if name in self.__dict__.get("_mangled", []):
            raise AttributeError(f"kernel '{name}' has C++ linkage; declare it extern \"C\" __global__ "
                                 "so it can be launched by name")
        raise AttributeError(f"no extern \"C\" __global__ kernel '{name}' in the source; found: {sorted(ks) or 'none'}")

    __getitem__ = __getattr__

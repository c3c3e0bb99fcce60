"""load_cuda: compile one bare CUDA source to a cubin (NVRTC in-process, or
nvcc) and launch its extern "C" __global__ kernels on torch tensors through
the CUDA driver API (ctypes on libcuda), on torch's current stream."""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
import threading
import time

from . import _args
from ._cache import CompileError, cache_dir, digest, tool_version, write_atomic
from ._sig import Function, cuda_kernels

_lock = threading.Lock()


# ---------------------------------------------------------------- discovery

def _site_dirs() -> list[str]:
    dirs = []
    for p in sys.path:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            dirs.append(os.path.join(p, "nvidia"))
    return dirs


def _cuda_homes() -> list[str]:
    homes = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")]
    homes.append("/usr/local/cuda")
    return [h for h in homes if h and os.path.isdir(h)]


def find_nvcc() -> str | None:
    env = os.environ.get("KEVOLVE_NVCC")
    if env and os.path.isfile(env):
        return env
    found = shutil.which("nvcc")
    if found:
        return found
    for h in _cuda_homes():
        p = os.path.join(h, "bin", "nvcc")
        if os.path.isfile(p):
            return p
    for d in _site_dirs():
        for sub in ("cu13/bin/nvcc", "cu12/bin/nvcc", "cuda_nvcc/bin/nvcc"):
            p = os.path.join(d, sub)
            if os.path.isfile(p):
                return p
    return None


def _include_dirs() -> list[str]:
    out = []
    for h in _cuda_homes():
        out.append(os.path.join(h, "include"))
    for d in _site_dirs():
        for sub in ("cu13/include", "cu12/include", "cuda_runtime/include"):
            out.append(os.path.join(d, sub))
    res = []
    for p in out:
        if os.path.isfile(os.path.join(p, "cuda_fp16.h")) and p not in res:
            res.append(p)
            if os.path.isdir(os.path.join(p, "cccl")):
                res.append(os.path.join(p, "cccl"))
    return res


_nvrtc = None


def _load_nvrtc():
    global _nvrtc
    if _nvrtc is not None:
        return _nvrtc or None
    cands = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for d in _site_dirs():
        cands += sorted(glob.glob(os.path.join(d, "*", "lib", "libnvrtc.so*")), reverse=True)
    for h in _cuda_homes():
        cands += sorted(glob.glob(os.path.join(h, "lib64", "libnvrtc.so*")), reverse=True)
    for c in cands:
        if "builtins" in c or "alt" in os.path.basename(c):
            continue
        try:
            lib = ctypes.CDLL(c)
            lib.nvrtcGetCUBIN  # noqa: B018 - must have the cubin entry point
        except (OSError, AttributeError):
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        _nvrtc = lib
        return lib
    _nvrtc = False
    return None


def _nvrtc_version(lib) -> str:
    ma, mi = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(ma), ctypes.byref(mi))
    return f"nvrtc {ma.value}.{mi.value} {getattr(lib, '_name', '')}"


# ------------------------------------------------------------------ compile

def _arch_default() -> str:
    import torch
    if torch.cuda.is_available():
        ma, mi = torch.cuda.get_device_capability()
        return f"sm_{ma}{mi}"
    return "sm_90"


def _compile_nvrtc(lib, src: str, arch: str, flags: list[str]) -> bytes:
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None)
    if r:
        raise CompileError(f"nvrtcCreateProgram failed: {lib.nvrtcGetErrorString(r).decode()}")
    try:
        opts = [f"--gpu-architecture={arch}", "--std=c++17", "-default-device", "--generate-line-info"]
        opts += [f"-I{d}" for d in _include_dirs()]
        opts += flags
        copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        r = lib.nvrtcCompileProgram(prog, len(opts), copts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if r:
            raise CompileError(f"NVRTC compile failed for {arch}: {lib.nvrtcGetErrorString(r).decode()}", log,
                               ["nvrtc", *opts])
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        if size.value == 0:
            raise CompileError(f"NVRTC produced no cubin for {arch} (a virtual arch like compute_XX gives PTX only)",
                               log)
        out = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, out)
        return out.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _compile_nvcc(nvcc: str, src: str, arch: str, flags: list[str], key: str) -> bytes:
    d = cache_dir("cuda")
    cu = os.path.join(d, key + ".cu")
    write_atomic(cu, src.encode())
    out = os.path.join(d, f".{key}.{os.getpid()}.cubin")
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", "-o", out, cu, *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise CompileError(f"nvcc failed for {arch} (exit {r.returncode})",
                           (r.stdout + r.stderr).replace(cu, "kernel.cu"), cmd)
    with open(out, "rb") as f:
        data = f.read()
    os.unlink(out)
    return data


# ------------------------------------------------------------------- driver

class _Driver:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise RuntimeError(f"the CUDA driver (libcuda.so.1) could not be loaded: {e}") from e
        self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.check(self.lib.cuInit(0), "cuInit")

    def check(self, r: int, what: str):
        if r:
            s = ctypes.c_char_p()
            self.lib.cuGetErrorString(r, ctypes.byref(s))
            msg = s.value.decode() if s.value else "unknown"
            raise RuntimeError(f"{what} failed: CUDA error {r} ({msg})")

    def ensure_context(self, dev: int):
        cur = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
        if cur.value:
            return
        d = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(d), dev), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), d), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


_driver: _Driver | None = None


def _drv() -> _Driver:
    global _driver
    with _lock:
        if _driver is None:
            _driver = _Driver()
    return _driver


def _dim3(v, what: str) -> tuple[int, int, int]:
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise TypeError(f"{what} must be 1 to 3 positive ints, got {v}")
    return v + (1,) * (3 - len(v))


class CudaKernel:
    def __init__(self, module: "CudaModule", fn: Function):
        self.module = module
        self.sig = fn
        self._funcs: dict[int, ctypes.c_void_p] = {}
        self._max_dyn: dict[int, int] = {}

    def _function(self, dev: int) -> ctypes.c_void_p:
        f = self._funcs.get(dev)
        if f is None:
            mod = self.module._module(dev)
            f = ctypes.c_void_p()
            _drv().check(_drv().lib.cuModuleGetFunction(ctypes.byref(f), mod, self.sig.name.encode()),
                         f"cuModuleGetFunction({self.sig.name})")
            self._funcs[dev] = f
        return f

    def __call__(self, *args, grid, block, shared_mem: int = 0, stream=None):
        import torch
        vals, dev = _args.convert(self.sig, args, "cuda")
        if dev is None:
            dev = torch.cuda.current_device()
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        with torch.cuda.device(dev):
            if stream is None:
                stream = torch.cuda.current_stream(dev)
            handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
            drv = _drv()
            drv.ensure_context(dev)
            f = self._function(dev)
            if shared_mem > 48 * 1024 and self._max_dyn.get(dev, 0) < shared_mem:
                # Above 48 KiB the kernel must opt in to dynamic shared memory.
                drv.check(drv.lib.cuFuncSetAttribute(f, 8, ctypes.c_int(shared_mem)),
                          f"{self.sig.name}: setting max dynamic shared memory to {shared_mem} bytes")
                self._max_dyn[dev] = shared_mem
            ptrs = (ctypes.c_void_p * max(1, len(vals)))(
                *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
            r = drv.lib.cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], int(shared_mem),
                                       ctypes.c_void_p(handle), ptrs, None)
            if r:
                drv.check(r, f"launching {self.sig.name} grid={g} block={b} shared_mem={shared_mem}")

    def __repr__(self):
        return f"<kevolve CUDA kernel {self.sig.signature()}>"


class CudaModule:
    """A compiled CUDA source: each extern "C" __global__ kernel is an attribute."""

    def __init__(self, cubin: bytes, kernels: dict[str, Function], mangled: list[str], *, backend: str,
                 arch: str, compile_seconds: float, cached: bool, path: str):
        self.cubin = cubin
        self.backend = backend
        self.arch = arch
        self.compile_seconds = compile_seconds
        self.cached = cached
        self.path = path
        self._mangled = mangled
        self._modules: dict[int, ctypes.c_void_p] = {}
        self._kernels = {n: CudaKernel(self, f) for n, f in kernels.items()}

    @property
    def kernels(self) -> list[str]:
        return list(self._kernels)

    def _module(self, dev: int) -> ctypes.c_void_p:
        m = self._modules.get(dev)
        if m is None:
            m = ctypes.c_void_p()
            _drv().check(_drv().lib.cuModuleLoadData(ctypes.byref(m), self.cubin),
                         f"cuModuleLoadData ({self.arch} cubin on cuda:{dev}; does the arch match the GPU?)")
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


_loaded: dict[str, CudaModule] = {}


def load_cuda(src: str, *, backend: str = "auto", arch: str | None = None, flags=()) -> CudaModule:
    """Compile a bare CUDA source (cached on disk by content) and return a
    module whose extern "C" __global__ kernels launch on torch tensors."""
    if backend not in ("auto", "nvrtc", "nvcc"):
        raise ValueError(f"backend must be 'auto', 'nvrtc' or 'nvcc', got {backend!r}")
    kernels, mangled = cuda_kernels(src)
    arch = arch or _arch_default()
    flags = [str(f) for f in flags]
    nvrtc = _load_nvrtc() if backend in ("auto", "nvrtc") else None
    nvcc = find_nvcc() if backend in ("auto", "nvcc") else None
    order = []
    if nvrtc is not None:
        order.append("nvrtc")
    if nvcc is not None:
        order.append("nvcc")
    if not order:
        what = {"nvrtc": "libnvrtc (pip install nvidia-cuda-nvrtc, or a CUDA toolkit)",
                "nvcc": "nvcc (a CUDA toolkit on PATH or /usr/local/cuda, or pip install nvidia-cuda-nvcc)",
                "auto": "libnvrtc or nvcc (a CUDA toolkit, or pip install nvidia-cuda-nvrtc)"}[backend]
        raise CompileError(f"no CUDA compiler found: need {what}")
    errors: list[CompileError] = []
    for b in order:
        ver = _nvrtc_version(nvrtc) if b == "nvrtc" else tool_version(nvcc, "--version")
        key = digest("cuda", b, src, arch, flags, ver)
        mkey = key
        if mkey in _loaded:
            return _loaded[mkey]
        path = os.path.join(cache_dir("cuda"), key + ".cubin")
        cached = os.path.exists(path)
        t0 = time.perf_counter()
        try:
            if cached:
                with open(path, "rb") as f:
                    cubin = f.read()
            else:
                cubin = _compile_nvrtc(nvrtc, src, arch, flags) if b == "nvrtc" else _compile_nvcc(nvcc, src, arch, flags, key)
                write_atomic(path, cubin)
        except CompileError as e:
            errors.append(e)
            # NVRTC has no host headers (stdio.h, cuda_runtime.h...): try nvcc.
            if b == "nvrtc" and "nvcc" in order and ("open source file" in e.log or "include file" in e.log):
                continue
            raise
        mod = CudaModule(cubin, kernels, mangled, backend=b, arch=arch,
                         compile_seconds=0.0 if cached else time.perf_counter() - t0, cached=cached, path=path)
        _loaded[mkey] = mod
        return mod
    raise errors[-1]

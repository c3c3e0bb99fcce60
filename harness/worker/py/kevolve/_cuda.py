"""load_cuda: compile one bare CUDA source to a cubin (NVRTC in-process, or
nvcc) and launch its extern "C" __global__ kernels on torch tensors through
the CUDA driver API (ctypes on libcuda), on torch's current stream."""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import sys

from . import _loader
from ._cache import CompileError, tool_version
from ._sig import Function, cuda_kernels


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
    cands = [c for c in cands if "builtins" not in c and "alt" not in os.path.basename(c)]
    lib = _loader.first_library(cands, "nvrtcGetCUBIN")  # the cubin entry point: not a stub
    if lib is None:
        _nvrtc = False
        return None
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    _nvrtc = lib
    return lib


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
    opts = [f"--gpu-architecture={arch}", "--std=c++17", "-default-device", "--generate-line-info"]
    opts += [f"-I{d}" for d in _include_dirs()]
    opts += flags
    return _loader.rtc_compile(lib, "nvrtc", "NVRTC", src, b"kernel.cu", opts, arch, "CUBIN",
                               empty=f"NVRTC produced no cubin for {arch} (a virtual arch like compute_XX gives PTX only)")


def _compile_nvcc(nvcc: str, src: str, arch: str, flags: list[str], key: str) -> bytes:
    return _loader.tool_compile("nvcc", "cuda", key, src, ".cu", ".cubin", arch,
                                lambda out, cu: [nvcc, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", "-o", out, cu, *flags])


# ------------------------------------------------------------------- driver

class _Driver(_loader.Api):
    vendor = "CUDA"

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise RuntimeError(f"the CUDA driver (libcuda.so.1) could not be loaded: {e}") from e
        self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.check(self.lib.cuInit(0), "cuInit")

    def error_string(self, r: int) -> str:
        s = ctypes.c_char_p()
        self.lib.cuGetErrorString(r, ctypes.byref(s))
        return s.value.decode() if s.value else ""

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

    def load(self, image: bytes, what: str) -> ctypes.c_void_p:
        m = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(m), image), what)
        return m

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        f = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()), f"cuModuleGetFunction({name})")
        return f

    def allow_dynamic_shared(self, f: ctypes.c_void_p, nbytes: int, name: str):
        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self.check(self.lib.cuFuncSetAttribute(f, 8, ctypes.c_int(nbytes)),
                   f"{name}: setting max dynamic shared memory to {nbytes} bytes")

    def launch(self, f, g, b, shared_mem: int, stream: int, params) -> int:
        return self.lib.cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared_mem,
                                       ctypes.c_void_p(stream), params, None)


_drv = _loader.Lazy(_Driver)


class CudaKernel(_loader.Kernel):
    label = "CUDA"


class CudaModule(_loader.Module):
    """A compiled CUDA source: each extern "C" __global__ kernel is an attribute."""

    api = _drv
    kernel_class = CudaKernel

    def __init__(self, cubin: bytes, kernels: dict[str, Function], mangled: list[str], *, backend: str,
                 arch: str, compile_seconds: float, cached: bool, path: str):
        super().__init__(cubin, kernels, mangled, backend=backend, arch=arch, compile_seconds=compile_seconds,
                         cached=cached, path=path)
        self.cubin = cubin

    def load_what(self, dev: int) -> str:
        return f"cuModuleLoadData ({self.arch} cubin on cuda:{dev}; does the arch match the GPU?)"


_loaded: dict[str, CudaModule] = {}


def load_cuda(src: str, *, backend: str = "auto", arch: str | None = None, flags=(), disk_cache: bool = True) -> CudaModule:
    """Compile a bare CUDA source (cached on disk by content) and return a
    module whose extern "C" __global__ kernels launch on torch tensors.
    disk_cache=False compiles in memory, and shares the module with no
    other caller (the harness's own kernels: see _loader.build)."""
    if backend not in ("auto", "nvrtc", "nvcc"):
        raise ValueError(f"backend must be 'auto', 'nvrtc' or 'nvcc', got {backend!r}")
    kernels, mangled = cuda_kernels(src)
    arch = arch or _arch_default()
    flags = [str(f) for f in flags]
    nvrtc = _load_nvrtc() if backend in ("auto", "nvrtc") else None
    nvcc = find_nvcc() if backend in ("auto", "nvcc") else None
    backends = []
    if nvrtc is not None:
        backends.append(_loader.Backend("nvrtc", lambda: _nvrtc_version(nvrtc),
                                        lambda s, a, f, _key: _compile_nvrtc(nvrtc, s, a, f)))
    if nvcc is not None:
        backends.append(_loader.Backend("nvcc", lambda: tool_version(nvcc, "--version"),
                                        lambda s, a, f, key: _compile_nvcc(nvcc, s, a, f, key)))
    if not backends:
        what = {"nvrtc": "libnvrtc (pip install nvidia-cuda-nvrtc, or a CUDA toolkit)",
                "nvcc": "nvcc (a CUDA toolkit on PATH or /usr/local/cuda, or pip install nvidia-cuda-nvcc)",
                "auto": "libnvrtc or nvcc (a CUDA toolkit, or pip install nvidia-cuda-nvrtc)"}[backend]
        raise CompileError(f"no CUDA compiler found: need {what}")

    def make(cubin, b, path, cached, seconds):
        return CudaModule(cubin, kernels, mangled, backend=b, arch=arch, compile_seconds=seconds, cached=cached, path=path)

    # NVRTC has no host headers (stdio.h, cuda_runtime.h...): nvcc may.
    return _loader.build("cuda", ".cubin", src, arch, flags, backends, _loaded, make,
                         lambda e: "open source file" in e.log or "include file" in e.log, disk_cache)

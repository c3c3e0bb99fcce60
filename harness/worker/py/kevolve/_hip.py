"""load_hip: compile one HIP source to an AMD code object (hiprtc in-process,
or ROCm's hipcc) and launch its extern "C" __global__ kernels on torch
tensors through the HIP module API (ctypes on libamdhip64), on torch's
current stream. The launch interface is load_cuda's:

    mod = load_hip(src)                  # or load_hip(cuda_src, hipify=True)
    mod.scale(x, y, 2.0, n, grid=(blocks,), block=(256,))

It needs torch's ROCm build (torch.version.hip) and an AMD GPU; on any other
torch it raises a RuntimeError that says so. Without an AMD GPU, compile_kernel
(language hip, arch gfx942) compiles and inspects HIP kernels instead."""

from __future__ import annotations

import ctypes
import glob
import os
import shutil

from . import _loader
from ._cache import CompileError, tool_version
from ._hipify import hipify as _hipify_src
from ._sig import Function, cuda_kernels


def rocm_torch_error() -> str | None:
    """None when torch is a ROCm build; else why load_hip cannot launch."""
    try:
        import torch
    except ImportError as e:
        return f"load_hip needs torch (ROCm build): {e}"
    if getattr(torch.version, "hip", None):
        return None
    built = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return (f"load_hip needs torch's ROCm build and an AMD GPU, but this torch {torch.__version__} is {built} "
            "(torch.version.hip is None). On NVIDIA use load_cuda; to check that a HIP kernel compiles for "
            "gfx942 without an AMD GPU, use the compile_kernel tool with language hip and arch gfx942.")


# ---------------------------------------------------------------- discovery

def _rocm_roots() -> list[str]:
    roots = [os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"]
    return [r for r in roots if r and os.path.isdir(r)]


def find_hipcc() -> str | None:
    """ROCm's hipcc (Debian's hipcc 5.2 is found too, and fails for gfx942
    with its own message)."""
    env = os.environ.get("KEVOLVE_HIPCC")
    if env and os.path.isfile(env):
        return env
    for r in _rocm_roots():
        p = os.path.join(r, "bin", "hipcc")
        if os.path.isfile(p):
            return p
    return shutil.which("hipcc")


_hiprtc = None


def _load_hiprtc():
    global _hiprtc
    if _hiprtc is not None:
        return _hiprtc or None
    cands = ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"]
    for r in _rocm_roots():
        cands += sorted(glob.glob(os.path.join(r, "lib", "libhiprtc.so*")), reverse=True)
    lib = _loader.first_library(cands, "hiprtcGetCode")  # the code entry point: not a stub
    if lib is None:
        _hiprtc = False
        return None
    lib.hiprtcGetErrorString.restype = ctypes.c_char_p
    _hiprtc = lib
    return lib


def _hiprtc_version(lib) -> str:
    ma, mi = ctypes.c_int(), ctypes.c_int()
    lib.hiprtcVersion(ctypes.byref(ma), ctypes.byref(mi))
    return f"hiprtc {ma.value}.{mi.value}"


# ------------------------------------------------------------------ compile

def _arch_default() -> str:
    import torch
    if torch.cuda.is_available():
        name = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "gcnArchName", "")
        if name:
            return name.split(":")[0]  # gfx942:sramecc+:xnack- -> gfx942
    return "gfx942"


def _compile_hiprtc(lib, src: str, arch: str, flags: list[str]) -> bytes:
    opts = [f"--offload-arch={arch}", "-O3", "-std=c++17", *flags]
    return _loader.rtc_compile(lib, "hiprtc", "hiprtc", src, b"kernel.hip", opts, arch, "Code")


def _compile_hipcc(hipcc: str, src: str, arch: str, flags: list[str], key: str) -> bytes:
    return _loader.tool_compile("hipcc", "hip", key, src, ".hip", ".hsaco", arch,
                                lambda out, path: [hipcc, "--genco", f"--offload-arch={arch}", "-O3", "-o", out, path, *flags],
                                timeout=600)


# ------------------------------------------------------------------ runtime

class _Runtime(_loader.Api):
    vendor = "HIP"

    def __init__(self):
        lib = None
        errs = []
        for name in ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                     *[os.path.join(r, "lib", "libamdhip64.so") for r in _rocm_roots()]]:
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as e:
                errs.append(str(e))
        if lib is None:
            raise RuntimeError(f"the HIP runtime (libamdhip64.so) could not be loaded: {errs[-1] if errs else ''}")
        self.lib = lib
        lib.hipGetErrorString.restype = ctypes.c_char_p
        lib.hipGetErrorString.argtypes = [ctypes.c_int]
        lib.hipModuleLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

    def error_string(self, r: int) -> str:
        msg = self.lib.hipGetErrorString(r)
        return msg.decode() if msg else ""

    def load(self, image: bytes, what: str) -> ctypes.c_void_p:
        m = ctypes.c_void_p()
        self.check(self.lib.hipModuleLoadData(ctypes.byref(m), image), what)
        return m

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        f = ctypes.c_void_p()
        self.check(self.lib.hipModuleGetFunction(ctypes.byref(f), module, name.encode()), f"hipModuleGetFunction({name})")
        return f

    def launch(self, f, g, b, shared_mem: int, stream: int, params) -> int:
        return self.lib.hipModuleLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], shared_mem,
                                              ctypes.c_void_p(stream), params, None)


_rt = _loader.Lazy(_Runtime)


class HipKernel(_loader.Kernel):
    label = "HIP"


class HipModule(_loader.Module):
    """A compiled HIP source: each extern "C" __global__ kernel is an attribute."""

    api = _rt
    kernel_class = HipKernel

    def __init__(self, code: bytes, kernels: dict[str, Function], mangled: list[str], *, backend: str,
                 arch: str, compile_seconds: float, cached: bool, path: str, source: str):
        super().__init__(code, kernels, mangled, backend=backend, arch=arch, compile_seconds=compile_seconds,
                         cached=cached, path=path)
        self.code = code
        self.source = source  # what was compiled (the hipified text when hipify=True)

    def check_launchable(self):
        err = rocm_torch_error()
        if err:
            raise RuntimeError(err)

    def load_what(self, dev: int) -> str:
        return f"hipModuleLoadData ({self.arch} code object on device {dev}; does the arch match the GPU?)"


_loaded: dict[str, HipModule] = {}


def load_hip(src: str, *, backend: str = "auto", arch: str | None = None, flags=(), hipify: bool = False) -> HipModule:
    """Compile a HIP source (cached on disk by content) and return a module
    whose extern "C" __global__ kernels launch on torch tensors (ROCm torch).

    hipify=True first ports a CUDA source with torch.utils.hipify; it does
    not fix 32-lane warp code (compile_kernel's lint finds that)."""
    if backend not in ("auto", "hiprtc", "hipcc"):
        raise ValueError(f"backend must be 'auto', 'hiprtc' or 'hipcc', got {backend!r}")
    if not isinstance(src, str):
        raise TypeError(f"load_hip: src must be a str, got {type(src).__name__}")
    if hipify:
        src = _hipify_src(src)
    kernels, mangled = cuda_kernels(src)
    err = rocm_torch_error()
    if err:
        raise RuntimeError(err)
    arch = arch or _arch_default()
    flags = [str(f) for f in flags]
    rtc = _load_hiprtc() if backend in ("auto", "hiprtc") else None
    hipcc = find_hipcc() if backend in ("auto", "hipcc") else None
    backends = []
    if rtc is not None:
        backends.append(_loader.Backend("hiprtc", lambda: _hiprtc_version(rtc),
                                        lambda s, a, f, _key: _compile_hiprtc(rtc, s, a, f)))
    if hipcc is not None:
        backends.append(_loader.Backend("hipcc", lambda: tool_version(hipcc, "--version"),
                                        lambda s, a, f, key: _compile_hipcc(hipcc, s, a, f, key)))
    if not backends:
        what = {"hiprtc": "libhiprtc (ROCm)", "hipcc": "hipcc (ROCm, in /opt/rocm/bin)",
                "auto": "libhiprtc or hipcc (a ROCm install, /opt/rocm)"}[backend]
        raise CompileError(f"no HIP compiler found: need {what}")

    def make(code, b, path, cached, seconds):
        return HipModule(code, kernels, mangled, backend=b, arch=arch, compile_seconds=seconds, cached=cached,
                         path=path, source=src)

    # hiprtc has no host headers: hipcc may.
    return _loader.build("hip", ".hsaco", src, arch, flags, backends, _loaded, make, lambda e: "file not found" in e.log)

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
import subprocess
import threading
import time

from . import _args
from ._cache import CompileError, cache_dir, digest, tool_version, write_atomic
from ._cuda import _dim3
from ._hipify import hipify as _hipify_src
from ._sig import Function, cuda_kernels

_lock = threading.Lock()


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
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
            lib.hiprtcGetCode  # noqa: B018 - must have the code entry point
        except (OSError, AttributeError):
            continue
        lib.hiprtcGetErrorString.restype = ctypes.c_char_p
        _hiprtc = lib
        return lib
    _hiprtc = False
    return None


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
    prog = ctypes.c_void_p()
    r = lib.hiprtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.hip", 0, None, None)
    if r:
        raise CompileError(f"hiprtcCreateProgram failed: {lib.hiprtcGetErrorString(r).decode()}")
    try:
        opts = [f"--offload-arch={arch}", "-O3", "-std=c++17", *flags]
        copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        r = lib.hiprtcCompileProgram(prog, len(opts), copts)
        size = ctypes.c_size_t()
        lib.hiprtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        lib.hiprtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if r:
            raise CompileError(f"hiprtc compile failed for {arch}: {lib.hiprtcGetErrorString(r).decode()}", log,
                               ["hiprtc", *opts])
        lib.hiprtcGetCodeSize(prog, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value)
        lib.hiprtcGetCode(prog, out)
        return out.raw
    finally:
        lib.hiprtcDestroyProgram(ctypes.byref(prog))


def _compile_hipcc(hipcc: str, src: str, arch: str, flags: list[str], key: str) -> bytes:
    d = cache_dir("hip")
    path = os.path.join(d, key + ".hip")
    write_atomic(path, src.encode())
    out = os.path.join(d, f".{key}.{os.getpid()}.hsaco")
    cmd = [hipcc, "--genco", f"--offload-arch={arch}", "-O3", "-o", out, path, *flags]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"hipcc timed out after {e.timeout}s for {arch}", "", cmd) from e
    if r.returncode != 0:
        raise CompileError(f"hipcc failed for {arch} (exit {r.returncode})",
                           (r.stdout + r.stderr).replace(path, "kernel.hip"), cmd)
    with open(out, "rb") as f:
        data = f.read()
    os.unlink(out)
    return data


# ------------------------------------------------------------------ runtime

class _Runtime:
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

    def check(self, r: int, what: str):
        if r:
            msg = self.lib.hipGetErrorString(r)
            raise RuntimeError(f"{what} failed: HIP error {r} ({msg.decode() if msg else 'unknown'})")


_runtime: _Runtime | None = None


def _rt() -> _Runtime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = _Runtime()
    return _runtime


class HipKernel:
    def __init__(self, module: "HipModule", fn: Function):
        self.module = module
        self.sig = fn
        self._funcs: dict[int, ctypes.c_void_p] = {}

    def _function(self, dev: int) -> ctypes.c_void_p:
        f = self._funcs.get(dev)
        if f is None:
            mod = self.module._module(dev)
            f = ctypes.c_void_p()
            _rt().check(_rt().lib.hipModuleGetFunction(ctypes.byref(f), mod, self.sig.name.encode()),
                        f"hipModuleGetFunction({self.sig.name})")
            self._funcs[dev] = f
        return f

    def __call__(self, *args, grid, block, shared_mem: int = 0, stream=None):
        # The same conversion and checks as load_cuda: torch's ROCm build
        # calls its GPU tensors "cuda".
        vals, dev = _args.convert(self.sig, args, "cuda")
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        err = rocm_torch_error()
        if err:
            raise RuntimeError(err)
        import torch
        if dev is None:
            dev = torch.cuda.current_device()
        with torch.cuda.device(dev):
            if stream is None:
                stream = torch.cuda.current_stream(dev)
            handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
            f = self._function(dev)
            ptrs = (ctypes.c_void_p * max(1, len(vals)))(
                *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
            r = _rt().lib.hipModuleLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], int(shared_mem),
                                                ctypes.c_void_p(handle), ptrs, None)
            if r:
                _rt().check(r, f"launching {self.sig.name} grid={g} block={b} shared_mem={shared_mem}")

    def __repr__(self):
        return f"<kevolve HIP kernel {self.sig.signature()}>"


class HipModule:
    """A compiled HIP source: each extern "C" __global__ kernel is an attribute."""

    def __init__(self, code: bytes, kernels: dict[str, Function], mangled: list[str], *, backend: str,
                 arch: str, compile_seconds: float, cached: bool, path: str, source: str):
        self.code = code
        self.backend = backend
        self.arch = arch
        self.compile_seconds = compile_seconds
        self.cached = cached
        self.path = path
        self.source = source  # what was compiled (the hipified text when hipify=True)
        self._mangled = mangled
        self._modules: dict[int, ctypes.c_void_p] = {}
        self._kernels = {n: HipKernel(self, f) for n, f in kernels.items()}

    @property
    def kernels(self) -> list[str]:
        return list(self._kernels)

    def _module(self, dev: int) -> ctypes.c_void_p:
        m = self._modules.get(dev)
        if m is None:
            m = ctypes.c_void_p()
            _rt().check(_rt().lib.hipModuleLoadData(ctypes.byref(m), self.code),
                        f"hipModuleLoadData ({self.arch} code object on device {dev}; does the arch match the GPU?)")
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
    order = (["hiprtc"] if rtc is not None else []) + (["hipcc"] if hipcc is not None else [])
    if not order:
        what = {"hiprtc": "libhiprtc (ROCm)", "hipcc": "hipcc (ROCm, in /opt/rocm/bin)",
                "auto": "libhiprtc or hipcc (a ROCm install, /opt/rocm)"}[backend]
        raise CompileError(f"no HIP compiler found: need {what}")
    for b in order:
        ver = _hiprtc_version(rtc) if b == "hiprtc" else tool_version(hipcc, "--version")
        key = digest("hip", b, src, arch, flags, ver)
        if key in _loaded:
            return _loaded[key]
        path = os.path.join(cache_dir("hip"), key + ".hsaco")
        cached = os.path.exists(path)
        t0 = time.perf_counter()
        try:
            if cached:
                with open(path, "rb") as f:
                    code = f.read()
            else:
                code = _compile_hiprtc(rtc, src, arch, flags) if b == "hiprtc" else _compile_hipcc(hipcc, src, arch, flags, key)
                write_atomic(path, code)
        except CompileError as e:
            # hiprtc has no host headers: try hipcc.
            if b == "hiprtc" and "hipcc" in order and "file not found" in e.log:
                continue
            raise
        mod = HipModule(code, kernels, mangled, backend=b, arch=arch,
                        compile_seconds=0.0 if cached else time.perf_counter() - t0, cached=cached, path=path,
                        source=src)
        _loaded[key] = mod
        return mod
    raise CompileError("no HIP compiler could build the source")  # pragma: no cover - the loop returns or raises

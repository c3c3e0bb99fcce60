"""Caching and lighter builds for KernelBench-style load_inline.

Two things make torch.utils.cpp_extension.load_inline slow for a search that
evaluates many candidates, and both are fixed here without changing what a
candidate means:

- torch rebuilds an extension whenever its name is new in a process's build
  directory and serializes same-named builds. Naming each extension after a
  hash of everything that determines its binary makes the build directory a
  cross-process cache: the same sources load the .so built earlier (~0.03 s
  instead of ~50 s), different sources never collide.

- Almost every CUDA source starts with `#include <torch/extension.h>`, which
  drags all of libtorch's C++ frontend (nn, optim, autograd, pybind11) through
  nvcc's three header-bound phases: cudafe++, cicc and the host compiler.
  The CUDA unit needs only tensors and ATen, which is what torch itself puts
  first in it (`torch/types.h`); the Python bindings live in main.cpp, which
  still includes torch/extension.h. Building the .cu against torch/types.h
  takes 23 s instead of 60 s on a 2-core machine. A source that needs more
  (pybind11, torch::nn, ...) fails that build and is rebuilt exactly as
  written, and the miss is remembered so its next evaluation goes straight
  to the full build.

- nvcc runs the host and device front ends of that unit one after the
  other; _nvcc.py runs them side by side (see there).

- The C++ unit (main.cpp: the candidate's cpp_sources and the pybind11
  bindings) starts with torch/extension.h whatever the candidate wrote.
  Where the harness has precompiled that header for exactly this build's
  compiler and flags (_pch.py, made by the harness's own build step before
  the candidate runs), the unit -include's it: about a third of the CPU.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import shlex
import sys
import tempfile

from . import _pch
from ._cache import digest, tool_version

_PATCHED_ATTR = "__kevolve_cached__"

# The include the light build swaps for torch/types.h, and what rules it out:
# pybind11 or the C++ frontend used in the CUDA unit itself.
_EXTENSION_H = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"][^\n]*$', re.M)
# ninja's line for a failed step: "FAILED: cuda.cuda.o", or since ninja 1.12
# "FAILED: [code=1] cuda.cuda.o".
_CUDA_UNIT_FAILED = re.compile(r"^FAILED:[^\n]*\bcuda\.cuda\.o\b", re.M)
_NEEDS_FULL = re.compile(r"PYBIND11_|pybind11|\bpy::|torch/python\.h|torch/all\.h|torch::(nn|optim|data|jit|serialize)\b")


def _setup_env() -> None:
    root = os.environ.get("KEVOLVE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kevolve", "kernels")
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(root, "torch_extensions"))
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    _use_side_by_side_nvcc()


def _use_side_by_side_nvcc() -> None:
    """Point torch's builds at _nvcc.py, which runs nvcc's host and device
    front ends at the same time. A PYTORCH_NVCC of the user's (ccache, say)
    wins; KEVOLVE_NVCC_PARALLEL=0 turns it off."""
    if os.environ.get("PYTORCH_NVCC") or os.environ.get("KEVOLVE_NVCC_PARALLEL") == "0":
        return
    try:
        import torch.utils.cpp_extension as ext
        real = ext._join_cuda_home("bin", "nvcc")
    except Exception:  # noqa: BLE001 - no CUDA toolkit: torch reports it when it needs one
        return
    if not os.path.exists(real):
        return
    os.environ["KEVOLVE_REAL_NVCC"] = real
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_nvcc.py")
    os.environ["PYTORCH_NVCC"] = f"{shlex.quote(sys.executable)} {shlex.quote(script)}"


def _arch_list() -> str:
    """Build for the GPU that is here only (torch's default may add PTX for
    more archs); honour an explicit TORCH_CUDA_ARCH_LIST."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    try:
        import torch
        if torch.cuda.is_available():
            ma, mi = torch.cuda.get_device_capability()
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{ma}.{mi}"
            return os.environ["TORCH_CUDA_ARCH_LIST"]
    except Exception:  # noqa: BLE001 - no GPU: leave torch's default
        pass
    return ""


def cached_name(name: str, args: tuple, kwargs: dict, variant: str = "") -> str:
    import torch
    skip = {"name", "verbose", "build_directory"}
    parts = [repr(a) for a in args] + [f"{k}={kwargs[k]!r}" for k in sorted(kwargs) if k not in skip]
    cxx = os.environ.get("CXX", "c++")
    key = digest("load_inline", variant, torch.__version__, _arch_list(), tool_version(cxx, "--version"), *parts)
    return f"{name}_kv{key[:16]}"


def cuda_unit_failed(build_error: str) -> bool:
    """Whether a failed build's log says the CUDA unit did not compile."""
    return bool(_CUDA_UNIT_FAILED.search(build_error))


def lighten_cuda_sources(cuda_sources) -> list[str] | None:
    """The CUDA sources with torch/extension.h replaced by torch/types.h, or
    None when there is nothing to gain or the sources need the full header."""
    if not cuda_sources:
        return None
    srcs = [cuda_sources] if isinstance(cuda_sources, str) else list(cuda_sources)
    if not all(isinstance(s, str) for s in srcs):
        return None
    text = "\n".join(srcs)
    if not _EXTENSION_H.search(text) or _NEEDS_FULL.search(text):
        return None
    return [_EXTENSION_H.sub("#include <torch/types.h>  // kevolve: was torch/extension.h", s) for s in srcs]


def _miss_marker(name: str) -> str:
    return os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name + ".full-headers")


def _with_pch(bound: inspect.BoundArguments) -> None:
    """Adds the harness's precompiled torch/extension.h to the C++ unit's
    flags where one was made for exactly them (never builds one here: this
    runs in the candidate's process)."""
    a = bound.arguments
    if a.get("no_implicit_headers"):
        return  # main.cpp does not start with torch/extension.h
    cuda = bool(a.get("cuda_sources")) if a.get("with_cuda") is None else bool(a.get("with_cuda"))
    extra = a.get("extra_cflags") or []
    if not isinstance(extra, (list, tuple)):
        return  # torch's own handling of anything else is left as it is
    extra = list(extra)
    flags = _pch.flags_for_build(cuda, extra, a.get("extra_include_paths") or [])
    if flags:
        a["extra_cflags"] = extra + flags


def shared_read_only() -> bool:
    """Whether this process may only read the shared extension cache: the
    harness says so (KEVOLVE_SHARED_CACHE_RO=1, a sandboxed candidate) or
    the folder is not writable."""
    d = os.environ.get("TORCH_EXTENSIONS_DIR", "")
    return os.environ.get("KEVOLVE_SHARED_CACHE_RO") == "1" or (os.path.isdir(d) and not os.access(d, os.W_OK))


def _call(orig, bound: inspect.BoundArguments):
    """torch's load_inline; where the shared cache is read-only, a build
    found there is imported as it is (torch would write its lock and build
    files beside it), and a new one is built in this job's own folder
    (KEVOLVE_JOB_BUILD_DIR, else the temporary folder): moving it into the
    shared cache is the harness's step, never the candidate's."""
    a = bound.arguments
    if a.get("build_directory") or not shared_read_only():
        return orig(*bound.args, **bound.kwargs)
    import torch.utils.cpp_extension as ext
    name = a["name"]
    built = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name)
    python_module = a.get("is_python_module", True)
    if not a.get("is_standalone") and os.path.exists(os.path.join(built, name + ext.LIB_EXT)):
        return ext._import_module_from_library(name, built, python_module)
    root = os.environ.get("KEVOLVE_JOB_BUILD_DIR") or os.path.join(tempfile.gettempdir(), "kevolve_torch_extensions")
    a["build_directory"] = os.path.join(root, name)
    os.makedirs(a["build_directory"], exist_ok=True)
    return orig(*bound.args, **bound.kwargs)


def _build(orig, name, args, kwargs):
    """One load_inline call, cached by content, light headers first."""
    _setup_env()
    full_name = cached_name(name, args, kwargs)
    try:
        bound = inspect.signature(orig).bind(name, *args, **kwargs)
    except TypeError:
        return orig(full_name, *args, **kwargs)  # let torch report the bad call
    _with_pch(bound)
    bound.arguments["name"] = full_name
    light = lighten_cuda_sources(bound.arguments.get("cuda_sources"))
    if light is None or bound.arguments.get("no_implicit_headers") or os.path.exists(_miss_marker(full_name)):
        return _call(orig, bound)
    full = inspect.BoundArguments(bound.signature, dict(bound.arguments))

    bound.arguments["cuda_sources"] = light
    light_name = cached_name(name, args, kwargs, variant="types.h")
    bound.arguments["name"] = light_name
    try:
        return _call(orig, bound)
    except RuntimeError as e:
        # Only a CUDA unit that failed to compile can be the header's fault;
        # main.cpp or the link would fail the same way with any header.
        if "Error building extension" not in str(e) or not cuda_unit_failed(str(e)):
            raise
        print(f"kevolve: the CUDA unit did not build against torch/types.h; rebuilding it with "
              f"torch/extension.h as written ({str(e).splitlines()[0][:200]})", file=sys.stderr)
        try:
            os.makedirs(os.path.dirname(_miss_marker(full_name)), exist_ok=True)
            with open(_miss_marker(full_name), "w") as f:
                f.write(str(e)[-4000:])
        except OSError:
            pass
    return _call(orig, full)


def _wrap(orig):
    @functools.wraps(orig)
    def load_inline(name, *args, **kwargs):
        return _build(orig, name, args, kwargs)

    setattr(load_inline, _PATCHED_ATTR, True)
    load_inline.__wrapped__ = orig
    return load_inline


def _original():
    import torch.utils.cpp_extension as ext
    if getattr(ext.load_inline, _PATCHED_ATTR, False):
        return ext.load_inline.__wrapped__
    return ext.load_inline


def load_inline_cached(name, *args, **kwargs):
    """torch.utils.cpp_extension.load_inline with the build cached by a hash
    of its sources and options, and the CUDA unit built with light headers
    where it can be."""
    return _build(_original(), name, args, kwargs)


def patch_load_inline() -> None:
    """Make torch.utils.cpp_extension.load_inline cache builds by content,
    build with all cores and with light headers. Idempotent; call before
    candidates are imported."""
    _setup_env()
    import torch
    if torch.cuda.is_initialized():
        # Fixed now, not at the first build: the environment is part of
        # what a kept worker child compares before and after a candidate.
        _arch_list()
    import torch.utils.cpp_extension as ext
    if getattr(ext.load_inline, _PATCHED_ATTR, False):
        return
    ext.load_inline = _wrap(ext.load_inline)

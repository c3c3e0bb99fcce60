"""Caching for KernelBench-style torch.utils.cpp_extension.load_inline.

torch rebuilds an extension whenever its name is new in a process's build
directory and serializes same-named builds; naming each extension after a hash
of everything that determines its binary makes the build directory a
cross-process cache: the same sources load the .so built earlier (~0.1 s
instead of ~60 s), different sources never collide.
"""

from __future__ import annotations

import functools
import os

from ._cache import digest

_PATCHED_ATTR = "__kevolve_cached__"


def _setup_env() -> None:
    root = os.environ.get("KEVOLVE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kevolve", "kernels")
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", os.path.join(root, "torch_extensions"))
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))


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


def cached_name(name: str, args: tuple, kwargs: dict) -> str:
    import torch
    skip = {"name", "verbose", "build_directory"}
    parts = [repr(a) for a in args] + [f"{k}={kwargs[k]!r}" for k in sorted(kwargs) if k not in skip]
    key = digest("load_inline", torch.__version__, _arch_list(), *parts)
    return f"{name}_kv{key[:16]}"


def _wrap(orig):
    @functools.wraps(orig)
    def load_inline(name, *args, **kwargs):
        _setup_env()
        return orig(cached_name(name, args, kwargs), *args, **kwargs)

    setattr(load_inline, _PATCHED_ATTR, True)
    load_inline.__wrapped__ = orig
    return load_inline


def load_inline_cached(name, *args, **kwargs):
    """torch.utils.cpp_extension.load_inline with the build cached by a hash
    of its sources and options."""
    import torch.utils.cpp_extension as ext
    orig = getattr(ext.load_inline, "__wrapped__", ext.load_inline) if getattr(ext.load_inline, _PATCHED_ATTR, False) else ext.load_inline
    _setup_env()
    return orig(cached_name(name, args, kwargs), *args, **kwargs)


def patch_load_inline() -> None:
    """Make torch.utils.cpp_extension.load_inline cache builds by content and
    build with all cores. Idempotent; call before candidates are imported."""
    _setup_env()
    import torch.utils.cpp_extension as ext
    if getattr(ext.load_inline, _PATCHED_ATTR, False):
        return
    ext.load_inline = _wrap(ext.load_inline)

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

- Lighter still, and tried first: ATen's tensor, its dispatch macros and
  the per-operator headers (ATen/ops/<op>.h) of exactly the torch:: and
  at:: functions the unit calls, with torch:: aliased to at:: as
  torch/types.h does. torch puts torch/types.h first in every CUDA unit
  it writes, so this tier writes the implicit headers itself
  (no_implicit_headers: cuda.h and cuda_runtime.h for the unit,
  torch/extension.h for main.cpp). That is about half of torch/types.h's
  parse in each of nvcc's three front ends (3.9 s against 7.9 s for g++
  alone). A unit
  that names anything else of torch's is not offered this build; one that
  fails it falls to torch/types.h, remembered the same way. Every tier
  declares the same functions with the same overloads where it compiles
  (one operator's overloads live in one header), so a unit that compiles
  means the same in each.

- nvcc runs the host and device front ends of that unit one after the
  other; _nvcc.py runs them side by side (see there).

- A build whose main.cpp cannot bind its functions (declared only in the
  CUDA source) fails after the whole CUDA unit compiled; _precheck.py
  shows it with main.cpp alone first.

- The C++ unit (main.cpp: the candidate's cpp_sources and the pybind11
  bindings) starts with torch/extension.h whatever the candidate wrote.
  Where the harness has precompiled that header for exactly this build's
  compiler and flags (_pch.py, made by the harness's own build step before
  the candidate runs), the unit -include's it: about a third of the CPU.
  What is left there is mostly torch's generated bindings; where the
  harness compiled those for the call's signatures (_bindcache.py),
  main.cpp links that object instead.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import shlex
import sys
import tempfile

from . import _bindcache, _bindings, _extcache, _pch, _precheck
from ._cache import digest, tool_version

_PATCHED_ATTR = "__kevolve_cached__"

# The include the light build swaps for torch/types.h, and what rules it out:
# pybind11 or the C++ frontend used in the CUDA unit itself.
_EXTENSION_H = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"][^\n]*$', re.M)
# ninja's line for a failed step: "FAILED: cuda.cuda.o", or since ninja 1.12
# "FAILED: [code=1] cuda.cuda.o".
_CUDA_UNIT_FAILED = re.compile(r"^FAILED:[^\n]*\bcuda\.cuda\.o\b", re.M)
_MAIN_UNIT_FAILED = re.compile(r"^FAILED:[^\n]*\bmain\.o\b", re.M)
_NEEDS_FULL = re.compile(r"PYBIND11_|pybind11|\bpy::|torch/python\.h|torch/all\.h|torch::(nn|optim|data|jit|serialize)\b")
# What the ATen tier knows of torch's namespace: functions with a
# per-operator header, and these types and constants (c10's, reached
# through `using namespace at`, or defined by the tier as torch/types.h
# defines them).
_TORCH_NAME = re.compile(r"\b(torch|at)::([A-Za-z_][A-Za-z0-9_]*)(\s*\()?")
_TORCH_TYPES = frozenset((
    "Tensor", "TensorOptions", "ScalarType", "Dtype", "Device", "DeviceType", "IntArrayRef", "MemoryFormat", "Scalar",
    "Layout", "Half", "BFloat16", "TensorList", "optional", "nullopt"))
_TORCH_CONSTANTS = {"kUInt8": "kByte", "kInt8": "kChar", "kInt16": "kShort", "kInt32": "kInt", "kInt64": "kLong",
                    "kFloat16": "kHalf", "kFloat32": "kFloat", "kFloat64": "kDouble"}
_OTHER_TORCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/(?!extension\.h)', re.M)
_OTHER_TORCH_INCLUDE_THAN_TYPES = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/(?!extension\.h|types\.h)', re.M)
# What the ATen tier lacks and torch/types.h has, found where the tier's
# builds failed on CUDA-L1's kernels: the deprecated Tensor::type() (its
# conversion to a ScalarType for AT_DISPATCH), and ATen's CUDA error macros
# and streams used without their headers.
_ATEN_TIER_LACKS = re.compile(r"\.type\(\)|\b(AT_CUDA_CHECK|C10_CUDA_CHECK|C10_CUDA_KERNEL_LAUNCH_CHECK|at::cuda::|c10::cuda::)")
_CUDA_ERROR_HEADER = re.compile(r'#[ \t]*include[ \t]*[<"](ATen/cuda/|c10/cuda/)')


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
    """Whether a failed build's log says the CUDA unit did not compile, and
    only it: main.cpp (the candidate's cpp_sources and the bindings) is the
    same whatever the CUDA unit includes, so a build where it failed fails
    with every header (a third of CUDA-L1's load_inline kernels define
    their own PYBIND11_MODULE beside torch's)."""
    return bool(_CUDA_UNIT_FAILED.search(build_error)) and not _MAIN_UNIT_FAILED.search(build_error)


def _cuda_source_list(cuda_sources) -> list[str] | None:
    """The CUDA sources as a list when a lighter header could replace their
    torch/extension.h, else None."""
    if not cuda_sources:
        return None
    srcs = [cuda_sources] if isinstance(cuda_sources, str) else list(cuda_sources)
    if not all(isinstance(s, str) for s in srcs):
        return None
    text = "\n".join(srcs)
    if not _EXTENSION_H.search(text) or _NEEDS_FULL.search(text):
        return None
    return srcs


def lighten_cuda_sources(cuda_sources) -> list[str] | None:
    """The CUDA sources with torch/extension.h replaced by torch/types.h, or
    None when there is nothing to gain or the sources need the full header."""
    srcs = _cuda_source_list(cuda_sources)
    if srcs is None:
        return None
    return [_EXTENSION_H.sub("#include <torch/types.h>  // kevolve: was torch/extension.h", s) for s in srcs]


def aten_header(text: str, ops_dir: str) -> str | None:
    """The include block of the ATen tier for a unit's text: ATen's tensor,
    dispatch macros and the per-operator headers (in ops_dir) of the
    functions it calls; None when it names anything of torch's the tier
    does not provide."""
    if _OTHER_TORCH_INCLUDE.search(text):
        return None  # another torch header: it may define what the tier defines
    lacks = _ATEN_TIER_LACKS.search(text)
    if lacks and (lacks.group(0) == ".type()" or not _CUDA_ERROR_HEADER.search(text)):
        return None
    ops = set()
    for ns, name, call in _TORCH_NAME.findall(text):
        if call and name[:1].islower():
            if not os.path.exists(os.path.join(ops_dir, name + ".h")):
                return None
            ops.add(name)
        elif ns == "torch" and name not in _TORCH_TYPES and name not in _TORCH_CONSTANTS and not _is_at_constant(name):
            return None
    lines = ["#include <ATen/core/Tensor.h>", "#include <ATen/Dispatch.h>"]
    lines += ["#include <ATen/ops/%s.h>" % op for op in sorted(ops)]
    consts = " ".join("constexpr auto %s = at::%s;" % kv for kv in sorted(_TORCH_CONSTANTS.items()))
    lines.append("namespace torch { using namespace at; using Dtype = at::ScalarType; %s }" % consts)
    return "  // kevolve: was torch/extension.h\n".join(lines) + "  // kevolve: was torch/extension.h"


def _is_at_constant(name: str) -> bool:
    # kFloat, kHalf, kCUDA, kStrided, ...: c10's, in at:: as well
    return len(name) > 1 and name[0] == "k" and name[1].isupper()


def aten_cuda_sources(cuda_sources) -> list[str] | None:
    """The CUDA sources with torch/extension.h replaced by the ATen tier's
    header block, or None where that tier does not apply."""
    srcs = _cuda_source_list(cuda_sources)
    if srcs is None:
        return None
    text = "\n".join(srcs)
    if len(_EXTENSION_H.findall(text)) != 1:
        return None  # the block's definitions must come once in the unit torch joins
    block = _aten_block(text)
    if block is None:
        return None
    return [_EXTENSION_H.sub(lambda _m: block, s) for s in srcs]


def _miss_marker(name: str, tier: str = "types.h") -> str:
    suffix = ".full-headers" if tier == "types.h" else ".%s-miss" % tier
    return os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name + suffix)


def _with_pch(bound: inspect.BoundArguments) -> tuple[str | None, str | None]:
    """Adds the harness's precompiled torch/extension.h to the C++ unit's
    flags where one was made for exactly them (never builds one here: this
    runs in the candidate's process). Returns the PCH headers made for this
    build ((torch/extension.h, torch/types.h), each or both None): the
    first's folder holds the shared bindings built with it (_bindcache.py),
    the second serves a main.cpp that needs no more once those are apart."""
    a = bound.arguments
    if a.get("no_implicit_headers"):
        return None, None  # main.cpp does not start with torch/extension.h
    cuda = bool(a.get("cuda_sources")) if a.get("with_cuda") is None else bool(a.get("with_cuda"))
    extra = a.get("extra_cflags") or []
    if not isinstance(extra, (list, tuple)):
        return None, None  # torch's own handling of anything else is left as it is
    extra = list(extra)
    ext_h, types_h = _pch.headers_for_build(cuda, extra, a.get("extra_include_paths") or [])
    if ext_h is None:
        return None, None
    a["extra_cflags"] = extra + ["-include", ext_h]
    return ext_h, types_h


def shared_read_only() -> bool:
    """Whether this process may only read the shared extension cache: the
    harness says so (KEVOLVE_SHARED_CACHE_RO=1, a sandboxed candidate) or
    the folder is not writable."""
    d = os.environ.get("TORCH_EXTENSIONS_DIR", "")
    return os.environ.get("KEVOLVE_SHARED_CACHE_RO") == "1" or (os.path.isdir(d) and not os.access(d, os.W_OK))


def _call(orig, bound: inspect.BoundArguments, pchs=(None, None)):
    """torch's load_inline, with the bindings the harness compiled for this
    call's signatures where there are some (_bindcache.py, beside the
    torch/extension.h PCH of pchs); a build or import that fails because
    of them is made again with torch's own."""
    shared = _with_shared_bindings(bound.arguments, *pchs)
    if shared is not None:
        args, light_main = shared
        try:
            return _call_as_is(orig, inspect.BoundArguments(bound.signature, args))
        except (RuntimeError, ImportError) as e:
            err = str(e)
            if not (_bindcache.is_bindings_failure(err) or (light_main and _MAIN_UNIT_FAILED.search(err))):
                raise
            print("kevolve: main.cpp did not build with the shared bindings%s; building it as torch writes it (%s)"
                  % (" and torch/types.h" if light_main else "", err.splitlines()[0][:200]), file=sys.stderr)
    return _call_as_is(orig, bound)


def _with_shared_bindings(a: dict, ext_h: str | None, types_h: str | None) -> tuple[dict, bool] | None:
    """(load_inline's arguments with the harness's shared bindings for this
    call's signatures in place of the module block torch generates, or the
    one main.cpp writes itself, and whether main.cpp went to
    torch/types.h), or None where the harness has none. With the
    bindings apart, main.cpp is the candidate's cpp_sources and a table:
    where those need nothing past torch/types.h (a CUDA candidate's
    declarations, most C++ kernels), its precompiled form serves, at a
    quarter of torch/extension.h's CPU."""
    if ext_h is None or a.get("is_standalone") or a.get("sycl_sources"):
        return None
    extra_ld = a.get("extra_ldflags") or []
    cpp = a.get("cpp_sources")
    cpp = [cpp] if isinstance(cpp, str) else list(cpp or [])
    if not isinstance(extra_ld, (list, tuple)) or not all(isinstance(c, str) for c in cpp):
        return None
    plan, cpp = _bindings_plan(cpp, a.get("functions"), bool(a.get("with_pytorch_error_handling", True)))
    obj = _bindcache.lookup(os.path.dirname(ext_h), plan) if plan is not None else None
    if obj is None or any(c.isspace() for c in obj):
        return None  # torch joins ldflags with spaces
    out = dict(a, functions=None, extra_ldflags=list(extra_ld) + [obj], cpp_sources=cpp + [plan.trampoline])
    body = [_EXTENSION_H.sub("#include <torch/types.h>  // kevolve: was torch/extension.h", c) for c in cpp]
    text = "\n".join(body)
    if types_h is None or _NEEDS_FULL.search(text) or _OTHER_TORCH_INCLUDE_THAN_TYPES.search(text):
        return out, False
    if out.get("cuda_sources") and not out.get("no_implicit_headers"):
        cuda = out["cuda_sources"]
        out["cuda_sources"] = _TORCH_CUDA_HEADERS + ([cuda] if isinstance(cuda, str) else list(cuda))
    out["no_implicit_headers"] = True
    out["cpp_sources"] = ["#include <torch/types.h>"] + body + [plan.trampoline]
    out["extra_cflags"] = [types_h if f == ext_h else f for f in out.get("extra_cflags") or []]
    return out, True


def _bindings_plan(cpp: list[str], functions, error_handling: bool):
    """(the shared bindings plan, main.cpp's sources without bindings of
    their own) for torch's generated bindings of `functions`, or for a
    module block the sources write themselves (a C++ candidate's, or one
    moved out of a CUDA source); (None, cpp) where neither applies."""
    if functions is not None:
        return _bindcache.plan(cpp, functions, error_handling), cpp
    found = _bindcache.plan_for_module_block(cpp)
    return found if found is not None else (None, cpp)


# What torch puts first in a CUDA unit when it writes the implicit headers.
_TORCH_CUDA_HEADERS = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]


def _aten_block(text: str) -> str | None:
    """The ATen tier's headers for a C++ unit's text, or None."""
    if _NEEDS_FULL.search(text):
        return None
    try:
        import torch
        ops_dir = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "ops")
    except Exception:  # noqa: BLE001
        return None
    return aten_header(text, ops_dir)


def _call_as_is(orig, bound: inspect.BoundArguments):
    """torch's load_inline. An extension the harness's build step made for
    this call is loaded from a checked copy (_extcache). Where the shared
    cache is read-only, a build
    found there is imported as it is (torch would write its lock and build
    files beside it), and a new one is built in this job's own folder
    (KEVOLVE_JOB_BUILD_DIR, else the temporary folder): moving it into the
    shared cache is the harness's step, never the candidate's."""
    a = bound.arguments
    read_only = shared_read_only()
    job_root = os.environ.get("KEVOLVE_JOB_BUILD_DIR") or os.path.join(tempfile.gettempdir(), "kevolve_torch_extensions")
    if not a.get("build_directory") and not a.get("is_standalone"):
        mod = _extcache.load(a["name"], a.get("is_python_module", True),
                             job_root if read_only else os.environ["TORCH_EXTENSIONS_DIR"])
        if mod is not None:
            return mod
    if a.get("build_directory") or not read_only:
        return orig(*bound.args, **bound.kwargs)
    import torch.utils.cpp_extension as ext
    name = a["name"]
    built = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name)
    python_module = a.get("is_python_module", True)
    if not a.get("is_standalone") and os.path.exists(os.path.join(built, name + ext.LIB_EXT)):
        return ext._import_module_from_library(name, built, python_module)
    a["build_directory"] = os.path.join(job_root, name)
    os.makedirs(a["build_directory"], exist_ok=True)
    return orig(*bound.args, **bound.kwargs)


# Builds that failed in this process, by cached name: their error again.
# A candidate that keeps None after a failed load_inline (and falls back to
# PyTorch) calls it again in every forward, inside the device phase too;
# torch would rebuild (and fail) each time, holding the device for the
# compiler. The same sources fail the same way, so the error comes at once.
_FAILED_BUILDS: dict[str, str] = {}
# Only a compiler's verdict on the sources is remembered, never a build the
# host cut short (a killed compiler, a full disk, memory).
_DETERMINISTIC_FAILURE = re.compile(r"\berror:|\berror #|undefined reference to")
_TRANSIENT_FAILURE = re.compile(r"Killed signal|No space left|Cannot allocate memory|out of memory|internal compiler error|"
                                r"Resource temporarily unavailable|Timeout|timed out", re.I)


def _build(orig, name, args, kwargs):
    """One load_inline call, cached by content, lightest headers first; a
    failed one fails again at once."""
    _setup_env()
    full_name = cached_name(name, args, kwargs)
    if full_name in _FAILED_BUILDS:
        raise RuntimeError(_FAILED_BUILDS[full_name])
    try:
        return _build_once(orig, name, full_name, args, kwargs)
    except RuntimeError as e:
        if str(e).startswith("Error building extension") and _DETERMINISTIC_FAILURE.search(str(e)) \
                and not _TRANSIENT_FAILURE.search(str(e)):
            _FAILED_BUILDS[full_name] = str(e)
        raise


def _build_once(orig, name, full_name, args, kwargs):
    """The build: main.cpp's check, then the CUDA unit's header tiers."""
    try:
        bound = inspect.signature(orig).bind(name, *args, **kwargs)
    except TypeError:
        return orig(full_name, *args, **kwargs)  # let torch report the bad call
    pchs = _with_pch(bound)
    bound.arguments["name"] = full_name
    errors = _precheck.check_main(bound.arguments)
    if errors is not None:
        raise RuntimeError("Error building extension '%s': main.cpp cannot bind its functions (checked on its own; "
                           "the CUDA unit was not built):\n%s" % (full_name, errors))
    if bound.arguments.get("no_implicit_headers"):
        return _call(orig, bound)
    cuda, cpp, moved = _unit_sources(bound, full_name)
    for tier, lighten in (("aten", aten_cuda_sources), ("types.h", lighten_cuda_sources)):
        light = lighten(cuda)
        if light is None or _extcache.missed(_miss_marker(full_name, tier)):
            continue
        # Each light build's cache entry is named after what it builds.
        variant = tier + ("+split" if moved else "") + ":" + digest(*light, *cpp)
        unit, main = light, cpp
        if tier == "aten":
            # torch puts torch/types.h first in every CUDA unit: this
            # tier writes the implicit headers itself, without it.
            unit = ["#include <cuda.h>", "#include <cuda_runtime.h>"] + light
            main = ["#include <torch/extension.h>"] + cpp
        done, mod, header_fault = _try_tier(orig, bound, "split" if moved else tier, unit, main,
                                            cached_name(name, args, kwargs, variant=variant), full_name,
                                            own_main=moved, own_headers=tier == "aten", pchs=pchs)
        if done:
            return mod
        if moved and not header_fault:
            break  # main.cpp with the moved bindings failed: as written next
    return _call(orig, bound, pchs)


def _unit_sources(bound, full_name):
    """(CUDA sources, C++ sources as a list, whether the bindings moved) to
    lighten: the bindings moved to main.cpp where the CUDA source has them
    (_bindings.py), else the sources as written."""
    a = bound.arguments
    cuda, cpp = a.get("cuda_sources"), a.get("cpp_sources")
    if _cuda_source_list(cuda) is None and not a.get("functions") and not _extcache.missed(_miss_marker(full_name, "split")):
        split = _bindings.split_bindings(cuda, cpp)
        if split is not None:
            return split[0], split[1], True
    return cuda, [cpp] if isinstance(cpp, str) else list(cpp or []), False


def _try_tier(orig, bound, tier, light, cpp, light_name, full_name, own_main=False, own_headers=False, pchs=(None, None)):
    """(True, module, False) where the CUDA unit built with the tier's
    headers; (False, None, whether only the CUDA unit failed) where it did
    not compile (or, own_main: the attempt's own main.cpp or link failed):
    the miss is remembered for the next evaluation of the same sources."""
    attempt = inspect.BoundArguments(bound.signature, dict(bound.arguments))
    # Copies: torch's load_inline adds its headers and bindings to the
    # lists it is given, in place.
    attempt.arguments["cuda_sources"] = list(light)
    attempt.arguments["cpp_sources"] = list(cpp)
    attempt.arguments["name"] = light_name
    if own_headers:
        attempt.arguments["no_implicit_headers"] = True
    try:
        return True, _call(orig, attempt, pchs), False
    except RuntimeError as e:
        # Only a CUDA unit that failed to compile can be the header's fault;
        # main.cpp or the link would fail the same way with any header,
        # unless the attempt moved the bindings there.
        if "Error building extension" not in str(e) or not (own_main or cuda_unit_failed(str(e))):
            raise
        what = "with its bindings moved to main.cpp" if own_main else f"against the {tier} headers"
        print(f"kevolve: the CUDA unit did not build {what}; trying heavier ones ({str(e).splitlines()[0][:200]})",
              file=sys.stderr)
        try:
            os.makedirs(os.path.dirname(_miss_marker(full_name, tier)), exist_ok=True)
            with open(_miss_marker(full_name, tier), "w") as f:
                f.write(str(e)[-4000:])
        except OSError:
            pass
        return False, None, cuda_unit_failed(str(e))


def build_for_cache(name, args, kwargs) -> tuple[str | None, bool]:
    """The harness's build step (_prepare.py): this load_inline call built
    as a candidate's would be (its cached name, header tiers and shared
    bindings) into TORCH_EXTENSIONS_DIR, never imported (_extcache). Returns
    (the library's path, whether it was built now), or (None, False) where
    the call builds nothing to share (a standalone executable). A call built
    before is not built again."""
    if kwargs.get("is_standalone"):
        return None, False
    _setup_env()
    done = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], cached_name(name, args, kwargs) + ".built")
    try:
        with open(done) as f:
            lib = f.read().strip()
        if os.path.exists(lib) and os.path.exists(lib + _extcache.MANIFEST):
            return lib, False
    except OSError:
        pass
    with _extcache.build_only():
        built = _build(_original(), name, args, kwargs)
    if not isinstance(built, _extcache.Built):
        return None, False
    with open(done, "w") as f:
        f.write(built.path)
    return built.path, True


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

"""The harness's build step before a load_inline candidate runs.

The candidate's own process may only read the shared caches, so whatever
they hold is made here, in a harness job (Go runs it before the
evaluation, outside the candidate's sandbox): the precompiled headers its
load_inline calls will want. Which ones is read from the source without
running it (ast): each load_inline call's extra_cflags and
extra_include_paths when they are literals (or names bound once, to
literals), and whether it has CUDA sources; and the pybind11 bindings torch
would generate for its functions, where cpp_sources and functions are
literals too (_bindcache.py). A call whose flags cannot be
read gets the PCH for no extra flags; a flag outside _pch._SAFE_FLAG, or an
include path, gets none (the build would run the compiler outside the
sandbox on the candidate's say).
"""

from __future__ import annotations

import ast
import collections
import os
import re
import threading
import time

from . import _bindcache, _bindings, _inline, _pch

# The worker's sandbox treats this job as the harness's builder: it keeps
# the server's uid to write the shared precompiled headers (Landlock still
# confines its writes to them); the candidate's source is read, never run.
SANDBOX_BUILDER = True


def _literals(tree: ast.Module) -> dict:
    """Names bound once in the whole file, to a literal: module-level
    sources, and the ones a method builds its load_inline call from
    (CUDA-L1's kernels keep them in the method that loads). A name bound
    more than once, anywhere, could mean either value: it is left out."""
    stores = collections.Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    out = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        if stores[node.targets[0].id] != 1:
            continue
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    return out


def _value(node, names: dict):
    """A literal's value, or the value of a name bound once to one (see
    _literals); lists of either too. None where reading cannot tell."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple)) and any(isinstance(e, ast.Name) for e in node.elts):
        items = [_value(e, names) for e in node.elts]
        return None if any(i is None for i in items) else items
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


_UNREAD = object()


def _exact(node, names: dict):
    """A literal's value as the call would pass it (a name bound once to a
    literal counts, see _literals), or _UNREAD: unlike _value, a literal
    None is a value here."""
    if isinstance(node, ast.Name):
        return names[node.id] if node.id in names else _UNREAD
    if isinstance(node, (ast.List, ast.Tuple)) and any(isinstance(e, ast.Name) for e in node.elts):
        items = [_exact(e, names) for e in node.elts]
        if any(i is _UNREAD for i in items):
            return _UNREAD
        return items if isinstance(node, ast.List) else tuple(items)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNREAD


def _literal_call(node: ast.Call, names: dict):
    """(name, args, kwargs) exactly as the call passes them where every
    argument reads as a literal, else None: the build step builds only what
    the candidate's call will name the same way (_inline.cached_name)."""
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    args = [_exact(a, names) for a in node.args]
    kwargs = {k.arg: _exact(k.value, names) for k in node.keywords}
    if any(v is _UNREAD for v in args) or any(v is _UNREAD for v in kwargs.values()):
        return None
    name = kwargs.pop("name") if "name" in kwargs else (args.pop(0) if args else None)
    return (name, tuple(args), kwargs) if isinstance(name, str) else None


# What the build step takes from a call it builds under the server's uid:
# flags that neither run nor load a program (a compiler or linker plugin,
# a wrapper, another driver) nor read or write a file the call names.
_SAFE_NVCC_FLAG = re.compile(
    r"^(-O[0-3]|--?use_fast_math|-lineinfo|--?expt-(relaxed-constexpr|extended-lambda)|-std=c\+\+[0-9a-z]+"
    r"|--?ftz=(true|false)|--?prec-(div|sqrt)=(true|false)|--?fmad=(true|false)|-maxrregcount=[0-9]+"
    r"|-Xptxas=-v|--?ptxas-options=-v|-[DU][A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.]*)?|-w)$")
_SAFE_LD_FLAG = re.compile(r"^-l[A-Za-z0-9_]+$")
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BOOL_ARGS = ("verbose", "with_cuda", "is_python_module", "with_pytorch_error_handling", "keep_intermediates",
              "use_pch", "no_implicit_headers")


def _flags_ok(value, pattern) -> bool:
    return value is None or (isinstance(value, (list, tuple)) and all(isinstance(f, str) and pattern.match(f.strip()) for f in value))


def harness_may_build(name, args, kwargs) -> bool:
    """Whether the build step may build this call itself: a module name, the
    sources, and only flags that run nothing and name no file; no include
    paths, build folder or SYCL. Anything else the candidate builds in its
    own job, as before."""
    import inspect

    import torch.utils.cpp_extension as ext
    try:
        a = inspect.signature(ext.load_inline).bind(name, *args, **kwargs).arguments
    except TypeError:
        return False
    allowed = {"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
               "extra_include_paths", *_BOOL_ARGS}
    return (set(a) <= allowed and isinstance(name, str) and bool(_MODULE_NAME.match(name))
            and not a.get("extra_include_paths")
            and all(isinstance(a.get(k, False), bool) for k in _BOOL_ARGS)
            and _flags_ok(a.get("extra_cflags"), _pch._SAFE_FLAG) and _flags_ok(a.get("extra_cuda_cflags"), _SAFE_NVCC_FLAG)
            and _flags_ok(a.get("extra_ldflags"), _SAFE_LD_FLAG))


def _is_load_inline(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "load_inline") or (isinstance(f, ast.Attribute) and f.attr == "load_inline")


def calls_in(code: str) -> list[dict]:
    """Each load_inline call the source makes, as far as reading it can
    tell: {"build": (with_cuda, extra_cflags, extra_include_paths),
    "cpp_sources", "cuda_sources", "functions", "error_handling"} (None
    where not a literal)."""
    if "load_inline" not in code:
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [{"build": (False, (), ()), "cpp_sources": None, "cuda_sources": None, "functions": None, "error_handling": True}]
    names = _literals(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_load_inline(node)):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        for i, pos in enumerate(("name", "cpp_sources", "cuda_sources", "functions")):
            if i < len(node.args) and pos not in kw:
                kw[pos] = node.args[i]
        cuda = "cuda_sources" in kw
        if "with_cuda" in kw and isinstance(_value(kw["with_cuda"], names), bool):
            cuda = _value(kw["with_cuda"], names)
        flags = _value(kw["extra_cflags"], names) if "extra_cflags" in kw else []
        incs = _value(kw["extra_include_paths"], names) if "extra_include_paths" in kw else []
        if isinstance(flags, str):
            continue  # torch would split it into characters: that build fails with or without a PCH
        if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
            flags = []  # not readable: the default set at least
        if incs or not all(_pch._SAFE_FLAG.match(f.strip()) for f in flags):
            continue
        eh = _value(kw["with_pytorch_error_handling"], names) if "with_pytorch_error_handling" in kw else True
        found.append({"build": (bool(cuda), tuple(f.strip() for f in flags), ()),
                      "cpp_sources": _value(kw["cpp_sources"], names) if "cpp_sources" in kw else [],
                      "cuda_sources": _value(kw["cuda_sources"], names) if "cuda_sources" in kw else None,
                      "functions": _value(kw["functions"], names) if "functions" in kw else None,
                      "error_handling": eh if isinstance(eh, bool) else None,
                      "literal": _literal_call(node, names)})
    return found


def builds_in(code: str) -> list[tuple[bool, tuple, tuple]]:
    """(with_cuda, extra_cflags, extra_include_paths) of each load_inline
    call the source makes, as far as reading it can tell; deduplicated."""
    return list(dict.fromkeys(c["build"] for c in calls_in(code)))


def _bindings_plan(call: dict):
    """The shared bindings the call's build will look for (_inline.py makes
    the same plan from the same sources), or None."""
    cpp, fns, eh = call["cpp_sources"], call["functions"], call["error_handling"]
    if eh is None or cpp is None:
        return None  # not read: the build's own sources are unknown
    if isinstance(cpp, str):
        cpp = [cpp]
    if fns is not None:
        return _bindcache.plan(cpp, fns, eh)
    if any("PYBIND11_MODULE" in c for c in cpp if isinstance(c, str)):
        found = _bindcache.plan_for_module_block(cpp)
    else:
        # A CUDA source's own block moves to main.cpp (_bindings.py).
        split = _bindings.split_bindings(call["cuda_sources"], cpp) if isinstance(call["cuda_sources"], (str, list)) else None
        found = _bindcache.plan_for_module_block(split[1]) if split is not None else None
    return found[0] if found is not None else None


# What one candidate may have the harness build for it, however many calls
# its source makes: each PCH is 20-100 s of CPU and 0.4-0.7 GB, each
# bindings object 10-25 s. Enough for two flag sets (a PCH pair each) and
# a few signature sets.
_MAX_NEW_PCH = 4
_MAX_NEW_BINDINGS = 4


def prepare(args, ctx=None) -> dict:
    """Worker job: makes the PCHs a candidate's load_inline calls will use,
    and the shared bindings for the calls whose functions it can read.
    It never waits for a build another evaluation's step is making: its
    candidate then builds as it would without (slower, the same result),
    at a lower CPU priority than the step that makes it.
    args: {"candidate": source}. Returns what it found and did."""
    t0 = time.monotonic()
    # No device query in this child: the arch is the evaluation device's
    # (the extensions' names carry it, as the candidate's own build's do)
    # unless the environment names one for both.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", str(args.get("arch") or "9.0"))
    out = {"builds": [], "pch_built": 0, "bindings_built": 0, "extensions_built": 0, "extensions_failed": 0, "errors": []}
    seen = set()
    for call in calls_in(args.get("candidate") or ""):
        if out["pch_built"] >= _MAX_NEW_PCH or out["bindings_built"] >= _MAX_NEW_BINDINGS:
            out["stopped"] = ("a build step makes at most %d precompiled headers and %d bindings objects; "
                              "the other calls build as torch builds them" % (_MAX_NEW_PCH, _MAX_NEW_BINDINGS))
            break
        entry = _prepare_call(call, out) if _pch.enabled() else {}
        if _BUILDING_ELSEWHERE in (entry.get("pch"), entry.get("types_pch")):
            _yield_to_pch_builds()
        if args.get("extensions") and call.get("literal") is not None and harness_may_build(*call["literal"]):
            _build_extension(call["literal"], entry, out)
        if repr(entry) not in seen:
            seen.add(repr(entry))
            out["builds"].append(entry)
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def _build_extension(literal, entry: dict, out: dict) -> None:
    """The call's extension, built into the shared extension folder for the
    candidate to load (_extcache); a call that does not build is the
    candidate's to report (its own build fails the same way)."""
    try:
        lib, built = _inline.build_for_cache(*literal)
    except Exception as e:  # noqa: BLE001 - the candidate's own build reports it
        out["extensions_failed"] += 1
        entry["extension"] = "did not build: %s" % (str(e).splitlines() or [type(e).__name__])[0][:200]
        return
    if lib is not None:
        entry["extension"] = lib
        out["extensions_built"] += int(built)


def _prepare_call(call: dict, out: dict) -> dict:
    """The PCHs and shared bindings for one load_inline call; what was made
    is counted in out."""
    cuda, flags, incs = call["build"]
    entry = {"with_cuda": cuda, "extra_cflags": list(flags)}
    try:
        ident = _pch.identity(cuda, flags, incs)
        if ident is None:
            entry["pch"] = "unsupported"
            return entry
        plan = _bindings_plan(call)
        # main.cpp goes to torch/types.h once its bindings are apart: that
        # PCH builds on another core meanwhile.
        types = _Background(_pch.ensure, _pch.types_identity(ident), False) if plan is not None else None
        hdr, built = _pch.ensure(ident, wait=False)
        out["pch_built"] += int(built)
        entry["pch"] = os.path.dirname(hdr) if hdr else _BUILDING_ELSEWHERE
        if hdr is not None and plan is not None:
            obj, built = _bindcache.ensure(ident, hdr, plan, wait=False)
            entry["bindings"] = obj or ("did not compile" if built else "not available")
            out["bindings_built"] += int(built)
        if types is not None:
            types_hdr, built = types.result()
            entry["types_pch"] = os.path.dirname(types_hdr) if types_hdr else _BUILDING_ELSEWHERE
            out["pch_built"] += int(built)
    except Exception as e:  # noqa: BLE001 - a build without a PCH is still correct
        out["errors"].append("%s: %s" % (entry, str(e)[-2000:]))
    return entry


_BUILDING_ELSEWHERE = "being built by another evaluation"
# The niceness a build step takes while another step makes the PCHs it
# lacks: a kernelbench run's first wave on a 16-core host is 16 such
# steps, two of them building the PCHs (one core each) beside fourteen
# builds without one (two to four compiler processes each). At equal
# priority the PCHs took 81-86 s there (H200 host) instead of the 20-30 s
# of an idle core, and every later build waited on them in turn.
_YIELD_NICENESS = 10


def _yield_to_pch_builds() -> None:
    """Lowers this job's CPU priority for the rest of it, the compilers it
    starts from here on included (they inherit it): the steps building a
    shared PCH keep their cores, and a build without one still gets every
    core they leave. Lowering needs no privilege; nothing raises it back,
    the job ends with its builds."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(os.getpriority(os.PRIO_PROCESS, 0), _YIELD_NICENESS))
    except OSError:
        pass


class _Background:
    """fn(*args) on a thread; result() joins it and returns or raises."""

    def __init__(self, fn, *args):
        self._out, self._err = None, None
        self._t = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._t.start()

    def _run(self, fn, args):
        try:
            self._out = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised in result()
            self._err = e

    def result(self):
        self._t.join()
        if self._err is not None:
            raise self._err
        return self._out

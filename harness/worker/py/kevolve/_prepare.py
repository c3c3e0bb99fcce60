"""The harness's build step before a load_inline candidate runs.

The candidate's own process may only read the shared caches, so whatever
they hold is made here, in a harness job (Go runs it before the
evaluation, outside the candidate's sandbox): the precompiled headers its
load_inline calls will want. Which ones is read from the source without
running it (ast): each load_inline call's extra_cflags and
extra_include_paths when they are literals (or module-level names bound to
literals), and whether it has CUDA sources. A call whose flags cannot be
read gets the PCH for no extra flags; a flag outside _pch._SAFE_FLAG, or an
include path, gets none (the build would run the compiler outside the
sandbox on the candidate's say).
"""

from __future__ import annotations

import ast
import os
import time

from . import _pch


def _literals(tree: ast.Module) -> dict:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    return out


def _value(node, names: dict):
    if isinstance(node, ast.Name):
        return names.get(node.id)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _is_load_inline(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "load_inline") or (isinstance(f, ast.Attribute) and f.attr == "load_inline")


def builds_in(code: str) -> list[tuple[bool, tuple, tuple]]:
    """(with_cuda, extra_cflags, extra_include_paths) of each load_inline
    call the source makes, as far as reading it can tell; deduplicated."""
    if "load_inline" not in code:
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return [(False, (), ())]
    names = _literals(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_load_inline(node)):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        cuda = "cuda_sources" in kw or (len(node.args) >= 3)
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
        found.append((bool(cuda), tuple(f.strip() for f in flags), ()))
    return list(dict.fromkeys(found))


def prepare(args, ctx=None) -> dict:
    """Worker job: makes the PCHs a candidate's load_inline calls will use.
    args: {"candidate": source}. Returns what it found and did."""
    t0 = time.monotonic()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # flags only: no device query in this child
    out = {"builds": [], "pch_built": 0, "errors": []}
    if not _pch.enabled():
        return out
    for cuda, flags, incs in builds_in(args.get("candidate") or ""):
        entry = {"with_cuda": cuda, "extra_cflags": list(flags)}
        try:
            ident = _pch.identity(cuda, flags, incs)
            if ident is None:
                entry["pch"] = "unsupported"
            else:
                hdr, built = _pch.ensure(ident)
                entry["pch"] = os.path.dirname(hdr)
                out["pch_built"] += int(built)
        except Exception as e:  # noqa: BLE001 - a build without a PCH is still correct
            out["errors"].append("%s: %s" % (entry, str(e)[-2000:]))
        out["builds"].append(entry)
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out

"""A precompiled torch/extension.h for load_inline's C++ translation unit.

Every load_inline build compiles a main.cpp that starts with
`#include <torch/extension.h>`: all of libtorch's C++ frontend and pybind11.
Parsing that is most of a C++ candidate's build (about 45 s of CPU on a
loaded 2-core machine, against 15 s with the header precompiled). gcc's
precompiled header (.gch) is valid only for the compiler that made it and
the flags and macros it was made with, so there is one per identity:

    (compiler binary and version, torch version and headers, the exact flags
     torch puts on the C++ compile minus the extension's name, python's
     include directory, the header text)

Each PCH lives in <cache>/pch/<digest of that identity>/ with identity.json
beside it. `lookup` recomputes the identity and uses a PCH only when the
stored identity equals it field by field and the .gch is the file that was
built (size and mtime): a changed torch, compiler or flag set means another
digest, so a stale PCH is never asked for. gcc checks again on its own and
falls back to parsing the header (the same result, only slower) when the PCH
does not fit; -Winvalid-pch -H show which it did (tests/test_pch.py).

Who writes: only the harness (`prepare`, run as a harness job outside the
candidate's sandbox, before the candidate's evaluation). A candidate's
load_inline only reads (`headers_for_build`): it never builds a PCH, so a
shared PCH never comes from candidate code.
"""

from __future__ import annotations

import fcntl
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

from ._cache import cache_dir, digest, tool_version

HEADER_NAME = "kevolve_torch_extension.h"
HEADER_TEXT = "#include <torch/extension.h>\n"
# The second PCH of a flag set: ATen and torch's tensor API without
# pybind11 or the C++ frontend, for a main.cpp whose bindings the harness
# compiled apart (_bindcache.py). A unit that -include's it compiles in
# about 1.5 s of CPU against about 6.5 s for one that -include's the first:
# each unit instantiates what its headers' inline code uses, whatever the
# unit itself uses, and pybind11's is most of that.
TYPES_HEADER_NAME = "kevolve_torch_types.h"
TYPES_HEADER_TEXT = "#include <torch/types.h>\n"
_KEEP = 12  # PCHs kept (0.4-0.7 GB each, two per flag set); the least recently prepared go first
_EVICT_IDLE_S = 3600
# Flags a harness build may take from a candidate's extra_cflags: the PCH is
# compiled outside the sandbox, so nothing that runs or loads a program
# (-fplugin, -wrapper, -B, -specs, @file) or reads files (-include, -imacros).
_SAFE_FLAG = re.compile(
    r"^-(O[0-3sgz]?|Ofast|std=(c|gnu)\+\+[0-9a-z]+|march=native|mtune=native|m(avx[0-9a-z]*|fma|f16c|bmi2?|sse[0-9.a-z]*|popcnt|lzcnt)"
    r"|ffast-math|fopenmp|funroll-loops|fno-[a-z-]+|fstrict-aliasing|fomit-frame-pointer|fvisibility=hidden"
    r"|W[a-z-]*|w|g|g0|DNDEBUG|[DU][A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.]*)?)$")


def enabled() -> bool:
    return os.environ.get("KEVOLVE_PCH", "1") != "0"


def _compiler_identity(cxx: str) -> dict:
    path = shutil.which(cxx) or cxx
    real = os.path.realpath(path)
    cc1 = tool_version(real, "-print-prog-name=cc1plus")
    st = os.stat(cc1) if os.path.isabs(cc1) and os.path.exists(cc1) else None
    return {"cxx": real, "version": tool_version(real, "--version").splitlines()[0] if tool_version(real, "--version") else "",
            "cc1plus": cc1, "cc1plus_stat": [st.st_size, int(st.st_mtime)] if st else None}


def _torch_identity() -> dict:
    import torch
    inc = os.path.join(os.path.dirname(torch.__file__), "include")
    st = os.stat(os.path.join(inc, "torch", "extension.h"))
    return {"torch": torch.__version__, "git": getattr(torch.version, "git_version", ""), "include": inc,
            "extension_h": [st.st_size, int(st.st_mtime)], "hip": bool(getattr(torch.version, "hip", None))}


def torch_flags(with_cuda: bool, extra_cflags, extra_include_paths) -> tuple[str, list[str]] | None:
    """(compiler, flags) torch's own ninja file puts on a load_inline C++
    compile, without -DTORCH_EXTENSION_NAME (the one flag that differs per
    extension and that the headers never read). Taken from torch's ninja
    writer itself, so they match exactly; None where that is not possible."""
    import torch.utils.cpp_extension as ext
    writer = getattr(ext, "_write_ninja_file_to_build_library", None)
    if writer is None:
        return None
    with tempfile.TemporaryDirectory(prefix="kevolve-pch-flags-") as tmp:
        src = os.path.join(tmp, "main.cpp")
        open(src, "w").close()
        values = {"path": os.path.join(tmp, "build.ninja"), "name": "kevolve_pch_probe", "sources": [src],
                  "extra_cflags": list(extra_cflags), "extra_cuda_cflags": [], "extra_sycl_cflags": [],
                  "extra_ldflags": [], "extra_include_paths": list(extra_include_paths), "with_cuda": with_cuda,
                  "with_sycl": False, "is_standalone": False}
        try:
            params = inspect.signature(writer).parameters
            if any(p not in values for p in params):
                return None
            writer(**{p: values[p] for p in params})
            with open(values["path"]) as f:
                text = f.read()
        except Exception:  # noqa: BLE001 - a torch that builds differently gets no PCH
            return None
    fields = dict(re.findall(r"^(cxx|cflags|post_cflags) = ?(.*)$", text, re.M))
    if "cxx" not in fields or "cflags" not in fields:
        return None
    flags = shlex.split(fields["cflags"]) + shlex.split(fields.get("post_cflags", ""))
    return fields["cxx"].strip(), [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]


def identity(with_cuda: bool, extra_cflags=(), extra_include_paths=()) -> dict | None:
    """What a PCH for this build must have been made with, or None when this
    build cannot use one (ROCm, a torch whose ninja writer is unknown)."""
    got = torch_flags(with_cuda, [str(f).strip() for f in extra_cflags], [str(p).strip() for p in extra_include_paths])
    if got is None:
        return None
    cxx, flags = got
    tid = _torch_identity()
    if tid["hip"]:
        return None  # extra_cflags reach hipcc's units too; keep ROCm builds as torch makes them
    return {"compiler": _compiler_identity(cxx), "torch": tid, "flags": flags, "header": HEADER_TEXT, "format": 1}


def _root() -> str:
    """<kernel cache>/pch, or KEVOLVE_PCH_DIR: PCHs are keyed and verified,
    so several caches (a test run's) may share one folder of them."""
    d = os.environ.get("KEVOLVE_PCH_DIR")
    if not d:
        return cache_dir("pch")
    os.makedirs(d, exist_ok=True)
    return d


def types_identity(ident: dict | None) -> dict | None:
    """The identity of the torch/types.h PCH for the same build as ident."""
    return None if ident is None else dict(ident, header=TYPES_HEADER_TEXT)


def _header_name(ident: dict) -> str:
    return TYPES_HEADER_NAME if ident.get("header") == TYPES_HEADER_TEXT else HEADER_NAME


def _dir_for(ident: dict) -> str:
    return os.path.join(_root(), digest(json.dumps(ident, sort_keys=True)))


def lookup(ident: dict | None) -> str | None:
    """The header to -include for this identity, when a verified PCH for
    exactly it is on disk; never builds."""
    if ident is None or not enabled():
        return None
    d = _dir_for(ident)
    try:
        with open(os.path.join(d, "identity.json")) as f:
            stored = json.load(f)
        st = os.stat(os.path.join(d, _header_name(ident) + ".gch"))
    except (OSError, ValueError):
        return None
    if stored.get("identity") != ident or stored.get("gch") != [st.st_size, int(st.st_mtime)] or not stored.get("verified"):
        return None
    return os.path.join(d, _header_name(ident))


def headers_for_build(with_cuda: bool, extra_cflags, extra_include_paths) -> tuple[str | None, str | None]:
    """(the torch/extension.h PCH's header, the torch/types.h one) made for
    exactly this build, each None where there is none. A header is
    -include'd, so it comes first with the same flags; main.cpp's own
    #include of it is then a no-op (#pragma once)."""
    try:
        ident = identity(with_cuda, extra_cflags, extra_include_paths)
        found = lookup(ident), lookup(types_identity(ident))
    except Exception:  # noqa: BLE001 - no PCH is always a correct build
        return None, None
    # torch joins flags with spaces
    return tuple(None if h is None or any(c.isspace() for c in h) else h for h in found)


def _verify(cxx: str, flags: list[str], hdr: str, tmp: str) -> tuple[bool, str]:
    """Whether gcc takes the PCH for a unit that -include's the header: -H
    prints '! <file>.gch' for a used PCH and 'x <file>.gch' for a rejected one."""
    src = os.path.join(tmp, "probe.cpp")
    with open(src, "w") as f:
        f.write("int kevolve_pch_probe() { return 0; }\n")
    r = subprocess.run([cxx, *flags, "-DTORCH_EXTENSION_NAME=kevolve_pch_probe", "-Winvalid-pch", "-H", "-include", hdr,
                        "-fsyntax-only", src], capture_output=True, text=True, timeout=600)
    used = any(ln.startswith("! ") and ln.strip().endswith(".gch") for ln in r.stderr.splitlines())
    return r.returncode == 0 and used, r.stderr[-2000:]


def _build(ident: dict, d: str) -> None:
    cxx, flags = ident["compiler"]["cxx"], ident["flags"]
    parent = os.path.dirname(d)
    tmp = tempfile.mkdtemp(prefix=".tmp-pch-", dir=parent)
    try:
        hdr = os.path.join(tmp, _header_name(ident))
        with open(hdr, "w") as f:
            f.write(ident["header"])
        gch = hdr + ".gch"
        r = subprocess.run([cxx, *flags, "-x", "c++-header", hdr, "-o", gch], capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            raise RuntimeError("building the precompiled header failed:\n" + r.stderr[-4000:])
        ok, log = _verify(cxx, flags, hdr, tmp)
        if not ok:
            raise RuntimeError("gcc does not use the precompiled header it just built:\n" + log)
        st = os.stat(gch)
        with open(os.path.join(tmp, "identity.json"), "w") as f:
            json.dump({"identity": ident, "gch": [st.st_size, int(st.st_mtime)], "verified": True, "built": time.time()}, f)
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide it from sandboxed candidates
        os.rename(tmp, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _evict(keep: str) -> None:
    root = os.path.dirname(keep)
    dirs = [os.path.join(root, n) for n in os.listdir(root) if not n.startswith(".") and os.path.isdir(os.path.join(root, n))]
    dirs.sort(key=lambda p: os.stat(p).st_mtime, reverse=True)
    # Only PCHs no build step asked for in the last hour: a build that was
    # just told to -include one must still find it.
    idle = time.time() - _EVICT_IDLE_S
    for d in [p for p in dirs if p != keep][_KEEP - 1:]:
        if os.stat(d).st_mtime < idle:
            shutil.rmtree(d, ignore_errors=True)


def ensure(ident: dict, wait: bool = True) -> tuple[str | None, bool]:
    """The PCH for this identity, built if missing: (its header, built now).
    Concurrent callers share one build (a lock file per identity): they
    wait for it, or with wait=False get (None, False) at once. A caller
    that waited and finds no PCH after the build gets (None, False): that
    build failed, and every waiter trying it again in turn would each
    spend the minutes it took."""
    d = _dir_for(ident)
    hdr = lookup(ident)
    if hdr is not None:
        os.utime(d)  # recently used: kept by _evict
        return hdr, False
    with open(d + ".lock", "w") as lock:
        waited = not lock_file(lock, False)
        if waited and not (wait and lock_file(lock, True)):
            return None, False
        hdr = lookup(ident)
        if hdr is not None or waited:
            return hdr, False
        shutil.rmtree(d, ignore_errors=True)  # a stale or broken one under this name
        _build(ident, d)
    _evict(d)
    hdr = lookup(ident)
    if hdr is None:
        raise RuntimeError("the precompiled header in %s does not verify after its build" % d)
    return hdr, True


def lock_file(f, wait: bool) -> bool:
    """Takes an exclusive lock on the open file f; False where another
    process holds it and wait is False."""
    try:
        fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True

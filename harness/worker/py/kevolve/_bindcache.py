"""load_inline's pybind11 bindings, compiled once per signature set.

With torch/extension.h precompiled (_pch.py), what is left of a C++
load_inline build is mostly the bindings torch appends to main.cpp:

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("f", torch::wrap_pybind_function(f), "f");
    }

Each m.def instantiates pybind11's function machinery and torch's type
casters for f's signature, about 10 s of CPU on a loaded 2-core machine,
for every candidate, although a search's candidates (and most KernelBench
problems) bind the same few signatures under different names. So the
module block moves to a unit of its own, compiled once, which takes the
functions, their Python names and docstrings from a table main.cpp
defines:

    void kevolve_bind_table_<h>(const char* const*& names, const char* const*& docs,
                                at::Tensor (*&f0)(at::Tensor));

and makes exactly the m.def calls the block would have made (torch's
wrapper included, or not, as the block had it). main.cpp keeps only its
own sources, that table and the module's entry point PyInit_<name>, which
calls the shared unit's; without pybind11 it compiles on the precompiled
torch/types.h (_pch.py). The shared unit depends only on the signatures
(parameter names dropped), the file-scope using-directives they may rely
on, which calls have docstrings and whether torch's wrapper is used, so one
object serves every candidate with that signature set. The module blocks
it replaces: the one torch generates for `functions=`, and a plain one a
candidate writes itself (or that _bindings.py moved out of its CUDA
source): `m.def("name", &f[, "doc"]);` statements only.

Type safety: main.cpp takes each function as torch's wrapper and m.def do
(deducing its type: an overloaded name does not compile, as with torch)
into a pointer of the signature read from its source, so a function of
another type does not compile there; and the table's C++ mangling encodes
every pointer type, return types included, as each unit resolved them,
and it has hidden visibility, so two units that read the same text
differently do not link. Either failure sends the build back to torch's
own bindings (_inline._call).

Who writes: only the harness's build step (_prepare.py), beside the
precompiled header whose compiler and flags the object was built with,
for the calls it can read from the candidate's source. A candidate's
load_inline only looks the object up; where there is none it builds as
torch does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass

from ._bindings import _blank_preprocessor, _depths, blank_comments_and_strings, file_scope_calls, plain_module_block
from . import _pch
from ._cache import digest, run_bounded

FORMAT = 1
KEEP = 256  # objects per PCH folder
_SYMBOL = "kevolve_bind_"
# What a bound signature may name: torch's and the standard library's types
# and the builtin ones. A type the candidate defines (or one this list does
# not know) keeps torch's own bindings: the shared unit cannot see it.
_TYPE_WORDS = frozenset((
    "torch", "at", "c10", "std", "Tensor", "TensorList", "IntArrayRef", "ArrayRef", "OptionalIntArrayRef", "SymInt",
    "optional", "Scalar", "ScalarType", "Dtype", "Device", "Layout", "MemoryFormat", "Half", "BFloat16",
    "vector", "string", "tuple", "pair", "array",
    "int64_t", "int32_t", "int16_t", "int8_t", "uint64_t", "uint32_t", "uint16_t", "uint8_t", "size_t",
    "int", "long", "short", "char", "float", "double", "bool", "unsigned", "signed", "void", "const"))
_BUILTIN = frozenset(("int", "long", "short", "char", "float", "double", "bool", "unsigned", "signed", "void", "const"))
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|&&|[<>,&*]|\d+|\S")
_DROP_SPECIFIERS = frozenset(("static", "inline", "extern", "constexpr"))
_USING = re.compile(r"\busing\s+(?:namespace\s+)?(?:torch|at|c10|std)(?:\s*::\s*\w+)*\s*;")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
# A macro, typedef or alias of one of those words: the two units could then
# read a signature differently in a way the linker does not see (a return
# type is not part of a function's mangled name).
_WORDS = "|".join(sorted(_TYPE_WORDS))
_REDEFINES = re.compile(r"#\s*define\s+(%s)\b|\btypedef\b[^;]*\b(%s)\s*;|\busing\s+(%s)\s*=" % ((_WORDS,) * 3))


@dataclass(frozen=True)
class Plan:
    """The shared bindings unit for one load_inline call, and what main.cpp
    gets in place of torch's generated block."""
    key: str        # names the object and its symbol
    unit: str       # the shared unit's source
    trampoline: str  # appended to main.cpp: the module block calling the unit


def _split_top(text: str) -> list[str]:
    """text split at commas outside <>, () and []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _type_text(tokens: list[str]) -> str | None:
    """A type's tokens as one spelling, or None where it names anything
    outside _TYPE_WORDS or uses a declarator this unit does not handle."""
    if not tokens:
        return None
    for t in tokens:
        if t[0].isalpha() or t[0] == "_":
            if t not in _TYPE_WORDS:
                return None
        elif t not in ("::", "<", ">", ",", "&", "*", "&&") and not t.isdigit():
            return None
    return re.sub(r"\s*(::|<|>|,)\s*", r"\1", " ".join(tokens)).replace(",", ", ")


def _param_type(param: str) -> str | None:
    """A parameter's type without its name and default value."""
    param = _split_default(param)
    toks = _TOKEN.findall(param)
    if (len(toks) > 1 and _IDENT.match(toks[-1]) and toks[-1] not in _BUILTIN and toks[-2] != "::"
            and any(t != "const" for t in toks[:-1])):
        toks = toks[:-1]  # the parameter's name (`const Tensor` has none)
    return _type_text(toks)


def _split_default(param: str) -> str:
    """param without its default value (`= ...` outside brackets)."""
    depth = 0
    for i, ch in enumerate(param):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "=" and depth == 0:
            return param[:i]
    return param


def _signature(code: str, depth: list[int], name: str) -> str | None:
    """`R (*)(P...)` for the file-scope function name, from its declarations
    and definition in the blanked code; None where it has none, several
    that differ (overloads), or a form this unit does not handle."""
    calls = file_scope_calls(code, depth, name)
    if calls is None:
        return None
    found = set()
    for start, at, opened, close in calls:
        if not code[close + 1:].lstrip().startswith(("{", ";")):
            return None  # a call, a const member, a trailing return: not ours to read
        ret = _type_text([t for t in _TOKEN.findall(code[start:at]) if t not in _DROP_SPECIFIERS])
        params = code[opened:close].strip()
        types = [] if params in ("", "void") else [_param_type(p) for p in _split_top(params)]
        if ret is None or any(t is None for t in types):
            return None
        found.add("%s (*)(%s)" % (ret, ", ".join(types)))
    return found.pop() if len(found) == 1 else None


def _function_names(functions) -> list[tuple[str, str, str]] | None:
    """(Python name, function, docstring) of each function as torch's
    load_inline reads `functions` (a name, a list of names, or a dict of
    name: docstring)."""
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, list):
        functions = {f: f for f in functions}
    if not isinstance(functions, dict) or not functions:
        return None
    out = []
    for name, doc in functions.items():
        if not isinstance(name, str) or not isinstance(doc, str) or not _IDENT.match(name):
            return None
        out.append((name, name, doc))
    return out


def plan(cpp_sources, functions, error_handling: bool = True) -> Plan | None:
    """The shared bindings for a load_inline call's functions, or None
    where its sources do not declare them plainly enough to share."""
    fns = _function_names(functions)
    return None if fns is None else _plan(cpp_sources, fns, error_handling)


def plan_for_module_block(cpp_sources) -> tuple[Plan, list[str]] | None:
    """(the shared bindings, cpp_sources without the block) for C++ sources
    that write their own plain module block (`m.def("name", &f[, "doc"]);`
    statements only, as _bindings.py moves out of a CUDA source), or None.
    The shared unit makes the same m.def calls, without torch's wrapper."""
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if not isinstance(cpp_sources, (list, tuple)) or not all(isinstance(s, str) for s in cpp_sources):
        return None
    found = [(i, m) for i, src in enumerate(cpp_sources) for m in [plain_module_block(src)] if m is not None]
    if len(found) != 1 or sum("PYBIND11_MODULE" in s for s in cpp_sources) != 1:
        return None
    i, (start, end, fns) = found[0]
    rest = list(cpp_sources)
    rest[i] = rest[i][:start] + rest[i][end:]
    p = _plan(rest, fns, False)
    return None if p is None else (p, rest)


def _plan(cpp_sources, fns: list[tuple[str, str, str | None]], error_handling: bool) -> Plan | None:
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    if not isinstance(cpp_sources, (list, tuple)) or not all(isinstance(s, str) for s in cpp_sources):
        return None
    text = blank_comments_and_strings("\n".join(cpp_sources))
    if _REDEFINES.search(text):
        return None  # a type word that may mean something else in main.cpp than in the shared unit
    code = _blank_preprocessor(text)
    if "PYBIND11_MODULE" in code or _SYMBOL in code:
        return None  # bindings of its own besides these: that build fails either way
    depth = _depths(code)
    sigs = [_signature(code, depth, fn) if _IDENT.match(fn) else None for _, fn, _ in fns]
    if any(s is None for s in sigs):
        return None
    usings = [" ".join(m.group(0).split()) for m in _USING.finditer(code) if depth[m.start()] == 0]
    docs = [doc is not None for _, _, doc in fns]
    shape = "\n".join(["format %d" % FORMAT, "error handling %s" % error_handling, "docs %s" % docs, *usings, *sigs])
    key = digest("kevolve-bindings", shape)[:20]
    return Plan(key, _unit(key, sigs, usings, error_handling, docs), _trampoline(key, sigs, fns))


def _table_decl(key: str, sigs: list[str]) -> str:
    """The function main.cpp defines to hand the shared unit its functions,
    names and docstrings. Hidden: resolved inside the extension at link
    time, where a parameter type the two units read differently is a
    missing symbol (function pointer types are part of the mangled name,
    return types included)."""
    ptrs = "".join(", %s" % s.replace("(*)", "(*&f%d)" % i) for i, s in enumerate(sigs))
    return ('__attribute__((visibility("hidden"))) void %stable_%s(const char* const*& names, const char* const*& docs%s)'
            % (_SYMBOL, key, ptrs))


def _unit(key: str, sigs: list[str], usings: list[str], error_handling: bool, docs: list[bool]) -> str:
    """The shared unit: torch's module block, with the functions and their
    names taken from main.cpp's table."""
    wrap = "torch::wrap_pybind_function(*f%d)" if error_handling else "f%d"
    local = "".join("  %s;\n" % s.replace("(*)", "(*f%d)" % i) for i, s in enumerate(sigs))
    defs = "".join("  m.def(names[%d], %s%s);\n" % (i, wrap % i, ", docs[%d]" % i if doc else "") for i, doc in enumerate(docs))
    args = "".join(", f%d" % i for i in range(len(sigs)))
    return "".join([
        "// kevolve: load_inline's bindings for one signature set, shared by every candidate with it\n",
        "#include <torch/extension.h>\n", *(u + "\n" for u in usings),
        _table_decl(key, sigs), ";\n",
        "PYBIND11_MODULE(%smodule_%s, m) {\n" % (_SYMBOL, key),
        "  const char* const* names;\n  const char* const* docs;\n", local,
        "  %stable_%s(names, docs%s);\n" % (_SYMBOL, key, args), defs, "}\n",
        '__attribute__((visibility("hidden"))) void* %sinit_%s() { return PyInit_%smodule_%s(); }\n'
        % (_SYMBOL, key, _SYMBOL, key)])


def _trampoline(key: str, sigs: list[str], fns: list[tuple[str, str, str | None]]) -> str:
    """What main.cpp gets in place of the module block: the table of its
    functions and the module's entry point, which needs no pybind11 (only
    the extension's name, which torch passes as a macro)."""
    # Names and docstrings go into C++ as they were written: torch's
    # generated block and a candidate's own both do that.
    names = ", ".join('"%s"' % n for n, _, _ in fns)
    docs = ", ".join('"%s"' % (d or "") for _, _, d in fns)
    # Each function is taken as torch::wrap_pybind_function and m.def take
    # it, by deducing its type: a name with several overloads does not
    # compile here either, where assigning it to the pointer would pick one.
    sets = "".join("  f%d = %sfn_%s(%s);\n" % (i, _SYMBOL, key, fn) for i, (_, fn, _) in enumerate(fns))
    return "".join([
        "// kevolve: the module's bindings for these functions, compiled once (%s*_%s)\n" % (_SYMBOL, key),
        "template <typename F> static F* %sfn_%s(F& f) { return &f; }\n" % (_SYMBOL, key),
        _table_decl(key, sigs), " {\n",
        "  static const char* const n[] = {%s};\n  static const char* const d[] = {%s};\n" % (names, docs),
        "  names = n;\n  docs = d;\n", sets, "}\n",
        '__attribute__((visibility("hidden"))) void* %sinit_%s();\n' % (_SYMBOL, key),
        "#define KEVOLVE_PYINIT_(name) PyInit_##name\n#define KEVOLVE_PYINIT(name) KEVOLVE_PYINIT_(name)\n",
        'extern "C" __attribute__((visibility("default"))) void* KEVOLVE_PYINIT(TORCH_EXTENSION_NAME)() '
        "{ return %sinit_%s(); }\n" % (_SYMBOL, key)])


def _paths(pch_dir: str, p: Plan) -> tuple[str, str]:
    base = os.path.join(pch_dir, "bind-" + p.key)
    return base + ".o", base + ".json"


def lookup(pch_dir: str, p: Plan) -> str | None:
    """The object for this plan, built by the harness beside the PCH in
    pch_dir and unchanged since; never builds."""
    obj, meta = _paths(pch_dir, p)
    try:
        with open(meta) as f:
            stored = json.load(f)
        st = os.stat(obj)
    except (OSError, ValueError):
        return None
    if stored.get("unit") != p.unit or stored.get("object") != [st.st_size, int(st.st_mtime)]:
        return None
    return obj


def failed(pch_dir: str, p: Plan) -> bool:
    """Whether the harness tried this plan and it did not compile."""
    try:
        with open(_paths(pch_dir, p)[1]) as f:
            stored = json.load(f)
    except (OSError, ValueError):
        return False
    return stored.get("unit") == p.unit and bool(stored.get("failed"))


def ensure(ident: dict, hdr: str, p: Plan, wait: bool = True) -> tuple[str | None, bool]:
    """(the object for p, built now), building it with the PCH's compiler,
    flags and header when missing; (None, built now) where it does not
    compile (remembered, so it is not tried again), or (None, False) when
    another process is building it and wait is False. Harness only."""
    d = os.path.dirname(hdr)
    obj = lookup(d, p)
    if obj is not None or failed(d, p):
        _touch(_paths(d, p)[1])  # recently used: kept by _evict
        return obj, False
    with open(os.path.join(d, "bind-%s.lock" % p.key), "w") as lock:
        if not _pch.lock_file(lock, wait):
            return None, False
        obj = lookup(d, p)
        if obj is not None or failed(d, p):
            return obj, False
        _compile(ident, hdr, p)
    _evict(d, keep=p.key)
    return lookup(d, p), True


def _touch(path: str) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _evict(d: str, keep: str) -> None:
    """At most KEEP objects per PCH folder (about 2 MB each): the least
    recently built or asked for go first, never the one just built."""
    metas = [os.path.join(d, f) for f in os.listdir(d) if f.startswith("bind-") and f.endswith(".json")]
    if len(metas) <= KEEP:
        return
    def age(m):
        try:
            return os.stat(m).st_mtime
        except OSError:
            return 0.0
    others = sorted((m for m in metas if not m.endswith("bind-%s.json" % keep)), key=age)
    for meta in others[:len(metas) - KEEP]:
        base = meta[:-len(".json")]
        for ext in (".json", ".o", ".lock"):
            try:
                os.unlink(base + ext)
            except OSError:
                pass


def _compile(ident: dict, hdr: str, p: Plan) -> None:
    d = os.path.dirname(hdr)
    obj, meta = _paths(d, p)
    tmp = tempfile.mkdtemp(prefix=".tmp-bind-", dir=d)
    try:
        src, out = os.path.join(tmp, "bindings.cpp"), os.path.join(tmp, "bindings.o")
        with open(src, "w") as f:
            f.write(p.unit)
        cmd = [ident["compiler"]["cxx"], *ident["flags"], "-DTORCH_EXTENSION_NAME=kevolve_bindings", "-include", hdr,
               # its entry point calls the module's PyInit here, never one
               # another extension in the process exports
               "-fno-semantic-interposition",
               "-c", src, "-o", out]
        r = run_bounded(cmd, 900)
        record = {"unit": p.unit, "format": FORMAT}
        if r.returncode == 0:
            os.chmod(out, 0o644)
            os.rename(out, obj)
            st = os.stat(obj)
            record["object"] = [st.st_size, int(st.st_mtime)]
        else:
            record["failed"] = True
            record["log"] = r.stderr[-4000:]
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(record, f)
        os.chmod(os.path.join(tmp, "meta.json"), 0o644)
        os.rename(os.path.join(tmp, "meta.json"), meta)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def is_bindings_failure(err: str) -> bool:
    """Whether a failed build or import is the shared bindings' doing (the
    trampoline did not compile, or the symbol did not resolve)."""
    return _SYMBOL in err

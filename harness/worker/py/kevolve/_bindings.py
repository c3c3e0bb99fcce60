"""Moving a CUDA unit's pybind11 bindings into load_inline's C++ unit.

Half of CUDA-L1's load_inline kernels write their PYBIND11_MODULE in the
CUDA source itself. That unit then needs torch/extension.h (pybind11 and
all of torch's Python glue), parsed three times by nvcc (cudafe++, cicc and
the host compiler): the most expensive build a candidate can ask for. The
bindings compile just as well in main.cpp, which has that header
precompiled (_pch.py), once the functions they bind are declared there.

split_bindings does that move where it is plain: one module block made of
`m.def("name", &function[, "doc"]);` statements only, each function defined
once at file scope, not a template, static or inline. The functions' own
text is untouched; main.cpp gets their declarations, copied from their
definitions, then the block. Anything else (py::arg, lambdas, classes, a
function in a namespace) is left as written. A split that does not build
(a declaration naming a type only the CUDA unit defines) is rebuilt as
written by the caller (_inline.py), so a split never changes whether a
candidate builds, only how long it takes.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"PYBIND11_MODULE\s*\(\s*TORCH_EXTENSION_NAME\s*,\s*([A-Za-z_]\w*)\s*\)\s*\{")
# One m.def("name", &function[, "doc"]); as it reads once its strings are
# blanked (blank_comments_and_strings): the quotes are spaces.
_DEF = r"{m}\s*\.\s*def\s*\(\s*,\s*&?\s*([A-Za-z_]\w*)\s*,?\s*\)\s*;"
_NOT_PLAIN = re.compile(r"\b(template|static|inline|constexpr|extern|__host__|__device__|__global__|__forceinline__)\b|::\s*$|operator")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')  # a string literal's text, escapes as written
_PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def _blank_preprocessor(code: str) -> str:
    """code with preprocessor lines (and their continuations) blanked."""
    return _PREPROCESSOR.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)


def blank_comments_and_strings(text: str) -> str:
    """text with comments, string and character literals replaced by spaces
    (newlines kept): same length, so offsets found in it hold in text."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _close(code: str, open_at: int, pair: str = "{}") -> int:
    """Index of the bracket closing the one at open_at, or -1."""
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == pair[0]:
            depth += 1
        elif code[k] == pair[1]:
            depth -= 1
            if depth == 0:
                return k
    return -1


def _depths(code: str) -> list[int]:
    """Brace depth before each character of code."""
    out, d = [], 0
    for ch in code:
        out.append(d)
        d += (ch == "{") - (ch == "}")
    return out


def file_scope_calls(code: str, depth: list[int], name: str) -> list[tuple[int, int, int, int]] | None:
    """Each file-scope `name(...)` in blanked code, unqualified (a
    declaration, a definition or a call at file scope) as (where its
    statement starts, where name starts, after its open parenthesis, its
    close parenthesis); None where a parenthesis does not close."""
    out = []
    for m in re.finditer(r"(?<![\w:.>])%s\s*\(" % re.escape(name), code):
        if depth[m.start()] != 0:
            continue
        close = _close(code, m.end() - 1, "()")
        if close < 0:
            return None
        start = max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), code.rfind("{", 0, m.start())) + 1
        out.append((start, m.start(), m.end(), close))
    return out


def _signature(text: str, code: str, depth: list[int], name: str) -> str | None:
    """The declaration of the one file-scope definition of name, or None."""
    calls = file_scope_calls(code, depth, name)
    if calls is None:
        return None
    found = []
    for start, at, _, close in calls:
        if not code[close + 1:].lstrip().startswith("{"):
            continue  # a declaration or a call, not the definition
        head = " ".join(code[start:at].split())
        if not head or _NOT_PLAIN.search(head) or depth[start] != 0:
            return None
        found.append(head + " " + text[at:close + 1])
    return found[0] if len(found) == 1 else None


def plain_module_block(src: str):
    """(start, end, [(Python name, function, docstring or None)]) of the one
    module block in src, where it is plain: `m.def("name", &function[,
    "doc"]);` statements only; else None."""
    code = blank_comments_and_strings(src)
    blocks = list(_BLOCK.finditer(code))
    if len(blocks) != 1:
        return None
    m = blocks[0]
    end = _close(code, m.end() - 1)
    if end < 0:
        return None
    body = code[m.end():end]
    defs = re.compile(_DEF.format(m=re.escape(m.group(1))))
    if defs.sub("", body).strip():
        return None  # more than plain m.def statements
    found = []
    for d in defs.finditer(body):
        # The arguments as written, split where the blanked code has its
        # commas: a name and a docstring must each be one string literal.
        at = m.end() + d.start()
        opened = code.index("(", at) + 1
        closed = _close(code, opened - 1, "()")
        cuts = [opened - 1] + [k for k in range(opened, closed) if code[k] == ","] + [closed]
        args = [src[a + 1:b].strip() for a, b in zip(cuts, cuts[1:])]
        lits = [_STRING.fullmatch(args[k]) for k in (0, 2) if k < len(args)]
        if len(args) not in (2, 3) or not all(lits):
            return None
        found.append((lits[0].group(1), d.group(1), lits[1].group(1) if len(lits) == 2 else None))
    return (m.start(), end + 1, found) if found else None


def split_bindings(cuda_sources, cpp_sources):
    """(CUDA sources without their module block, C++ sources with the
    declarations and the block), or None where the split is not plain."""
    if isinstance(cuda_sources, str):
        cuda_sources = [cuda_sources]
    if not isinstance(cuda_sources, (list, tuple)) or len(cuda_sources) != 1 or not isinstance(cuda_sources[0], str):
        return None
    if cpp_sources is None:
        cpp_sources = []
    cpp = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
    if not all(isinstance(s, str) for s in cpp):
        return None
    text = cuda_sources[0]
    found = plain_module_block(text)
    if found is None:
        return None
    start, end, defs = found
    names = list(dict.fromkeys(fn for _, fn, _ in defs))
    rest = text[:start] + text[end:]
    rest_code = _blank_preprocessor(blank_comments_and_strings(rest))
    depth = _depths(rest_code)
    decls = []
    for name in names:
        sig = _signature(rest, rest_code, depth, name)
        if sig is None:
            return None
        decls.append(sig + ";")
    block = text[start:end]
    moved = "\n// kevolve: moved from the CUDA source\n" + "\n".join(decls) + "\n" + block + "\n"
    return [rest], cpp + [moved]

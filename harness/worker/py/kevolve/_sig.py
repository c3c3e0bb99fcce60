"""A small C/CUDA declaration parser: just enough to find the entry points of a
bare kernel source and the types of their parameters.

It tokenizes (dropping comments, string literals and preprocessor lines),
walks the top level of the file (namespaces and extern "C" blocks are
transparent, struct/class bodies and function bodies are skipped) and reads
each function definition's parameter list. Templates are ignored: a template
cannot have C linkage, so it can never be an entry point we launch by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Qualifiers that do not change how an argument is passed.
_QUALIFIERS = {
    "const", "volatile", "__restrict__", "__restrict", "restrict", "register",
    "__grid_constant__", "struct", "enum", "union", "__align__",
}
# Keywords that make up builtin type names (a trailing one is not a param name).
_TYPE_WORDS = {
    "void", "char", "short", "int", "long", "float", "double", "bool", "_Bool",
    "signed", "unsigned", "__int128",
}
_DECL_SPECIFIERS = {
    "__global__", "__device__", "__host__", "__forceinline__", "__noinline__",
    "inline", "__inline__", "static", "extern", "__launch_bounds__",
    "__cluster_dims__", "__attribute__", "__declspec", "noexcept",
}


@dataclass
class Param:
    name: str          # "" when the declaration leaves it unnamed
    base: str          # normalized base type, e.g. "float", "unsigned long long"
    pointer: int       # levels of indirection (arrays count as one)
    decl: str          # the parameter as written (qualifiers included), for messages

    @property
    def is_pointer(self) -> bool:
        return self.pointer > 0


@dataclass
class Function:
    name: str
    ret: str                      # normalized return type ("void" for kernels)
    ret_pointer: int
    params: list[Param]
    specifiers: set[str] = field(default_factory=set)
    extern_c: bool = False
    line: int = 0

    def signature(self) -> str:
        ps = ", ".join(p.decl for p in self.params)
        return f"{self.name}({ps})"


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])*')
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<number>\.?[0-9][0-9A-Za-z_.]*(?:[eEpP][+-][0-9]+)?[A-Za-z]*)
  | (?P<punct>::|->|<<|>>|&&|\|\||[-+*/%&|^!~<>=?:;,.(){}\[\]\#])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass
class _Tok:
    kind: str
    text: str
    line: int


def _strip_preprocessor(src: str) -> str:
    """Blank out preprocessor lines (with backslash continuations), keeping
    line numbers. Comments are handled by the tokenizer, so a '#' inside a
    block comment is harmless there; here we only look at line starts."""
    out = []
    cont = False
    for line in src.split("\n"):
        stripped = line.lstrip()
        if cont or stripped.startswith("#"):
            cont = line.rstrip().endswith("\\")
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def tokenize(src: str) -> list[_Tok]:
    src = _strip_preprocessor(src)
    toks: list[_Tok] = []
    line = 1
    for m in _TOKEN_RE.finditer(src):
        kind = m.lastgroup
        text = m.group()
        if kind in ("ws", "lcomment", "bcomment"):
            pass
        elif kind == "char":
            toks.append(_Tok("number", "0", line))
        else:
            toks.append(_Tok(kind, text, line))
        line += text.count("\n")
    return toks


def _skip_balanced(toks: list[_Tok], i: int, open_: str, close: str) -> int:
    """toks[i] is `open_`; return the index just past its matching `close`."""
    depth = 0
    n = len(toks)
    while i < n:
        t = toks[i].text
        if t == open_:
            depth += 1
        elif t == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _normalize_type(words: list[str]) -> str:
    words = [w for w in words if w not in _QUALIFIERS]
    # "std :: int64_t" -> "int64_t"; any other scope keeps its last part.
    while "::" in words:
        k = words.index("::")
        del words[max(0, k - 1):k + 1]
    ws = list(words)
    if "signed" in ws and not (ws == ["signed", "char"] or ws == ["char", "signed"]):
        ws.remove("signed")
        if not ws:
            ws = ["int"]
    if "int" in ws and any(w in ws for w in ("short", "long", "unsigned")):
        ws.remove("int")
    if ws == ["unsigned"]:
        return "unsigned"
    if ws and ws[0] != "unsigned" and "unsigned" in ws:
        ws.remove("unsigned")
        ws.insert(0, "unsigned")
    return " ".join(ws)


def _parse_param(toks: list[_Tok]) -> Param | None:
    words = [t.text for t in toks]
    decl = " ".join(words).replace(" *", "*").replace("* ", "* ").replace(" ,", ",")
    # Drop a default argument (C++), attribute lists and __align__(n).
    if "=" in words:
        words = words[: words.index("=")]
    cleaned: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("__attribute__", "__align__", "alignas", "__declspec") and i + 1 < len(words) and words[i + 1] == "(":
            depth = 0
            while i < len(words):
                if words[i] == "(":
                    depth += 1
                elif words[i] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        cleaned.append(w)
        i += 1
    words = cleaned
    if not words or words == ["void"]:
        return None
    if words == ["..."] or words[-1] == "...":
        return Param(name="...", base="...", pointer=0, decl="...")
    pointer = 0
    # Arrays: "float x[]" / "float x[16]" decay to pointers.
    while words and words[-1] == "]":
        k = len(words) - 1 - words[::-1].index("[")
        words = words[:k]
        pointer += 1
    pointer += words.count("*")
    refs = words.count("&")
    words = [w for w in words if w not in ("*", "&")]
    name = ""
    core = [w for w in words if w not in _QUALIFIERS]
    if len(core) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", core[-1]) and core[-1] not in _TYPE_WORDS and core[-2] != "::":
        name = core[-1]
        # Remove the last occurrence of the name from words.
        k = len(words) - 1 - words[::-1].index(name)
        words = words[:k] + words[k + 1:]
    base = _normalize_type(words)
    if refs:
        base += "&"
    return Param(name=name, base=base, pointer=pointer, decl=decl)


def _split_top(toks: list[_Tok], sep: str) -> list[list[_Tok]]:
    parts: list[list[_Tok]] = [[]]
    depth = 0
    angle = 0
    for t in toks:
        x = t.text
        if x in "([{":
            depth += 1
        elif x in ")]}":
            depth -= 1
        elif x == "<" and depth == 0:
            angle += 1
        elif x == ">" and depth == 0 and angle > 0:
            angle -= 1
        if x == sep and depth == 0 and angle == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    if parts == [[]]:
        return []
    return parts


def _parse_function(decl: list[_Tok], extern_c: bool) -> Function | None:
    """decl: the tokens of a declaration up to (not including) its body '{'."""
    texts = [t.text for t in decl]
    if not texts or texts[0] in ("template", "typedef", "using", "namespace", "class", "struct", "union", "enum"):
        return None
    if "operator" in texts or "=" in texts:
        return None
    # The parameter list is the first top-level "( ... )" that follows an
    # identifier which is not a specifier taking arguments (__launch_bounds__...).
    i = 0
    n = len(texts)
    while i < n:
        if texts[i] == "(":
            prev = texts[i - 1] if i > 0 else ""
            if prev in ("__launch_bounds__", "__attribute__", "__declspec", "__align__", "alignas", "__cluster_dims__", "__maxnreg__"):
                i = _skip_balanced(decl, i, "(", ")")
                continue
            break
        i += 1
    if i >= n or i == 0 or decl[i - 1].kind != "ident":
        return None
    name = texts[i - 1]
    if i >= 2 and texts[i - 2] == "::":  # out-of-line member definition
        return None
    end = _skip_balanced(decl, i, "(", ")")
    params_toks = decl[i + 1:end - 1]
    spec_words: set[str] = set()
    ret_words: list[str] = []
    j = 0
    while j < i - 1:
        w = texts[j]
        if w in ("__launch_bounds__", "__attribute__", "__declspec", "__cluster_dims__", "__maxnreg__") and j + 1 < i - 1 and texts[j + 1] == "(":
            spec_words.add(w)
            j = _skip_balanced(decl, j + 1, "(", ")")
            continue
        if w in _DECL_SPECIFIERS:
            spec_words.add(w)
        elif w == '"C"' or (decl[j].kind == "string"):
            pass
        else:
            ret_words.append(w)
        j += 1
    if not ret_words and "__global__" not in spec_words:
        return None  # a call or a macro invocation, not a definition
    ret_ptr = ret_words.count("*")
    ret = _normalize_type([w for w in ret_words if w not in ("*", "&")]) or "void"
    params: list[Param] = []
    for part in _split_top(params_toks, ","):
        p = _parse_param(part)
        if p is not None:
            params.append(p)
    return Function(name=name, ret=ret, ret_pointer=ret_ptr, params=params,
                    specifiers=spec_words, extern_c=extern_c, line=decl[i - 1].line)


def parse_functions(src: str) -> list[Function]:
    """All top-level function definitions (with a body) in src, in order."""
    toks = tokenize(src)
    funcs: list[Function] = []
    # Stack of open transparent scopes: True where the scope is extern "C".
    scopes: list[bool] = []
    decl: list[_Tok] = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        x = t.text
        if x == ";":
            decl = []
            i += 1
            continue
        if x == "}":
            if scopes:
                scopes.pop()
            decl = []
            i += 1
            continue
        if x == "(":
            # Keep parenthesized groups whole so "{" inside them (lambdas,
            # initializers) cannot end the declaration.
            end = _skip_balanced(toks, i, "(", ")")
            decl.extend(toks[i:end])
            i = end
            continue
        if x == "<" and decl and decl[0].text == "template" and len(decl) == 1:
            end = _skip_balanced(toks, i, "<", ">")
            decl.extend(toks[i:end])
            i = end
            continue
        if x == "{":
            texts = [d.text for d in decl]
            in_c = bool(scopes) and scopes[-1]
            if texts == ["extern", '"C"'] or texts == ["extern", '"C++"']:
                scopes.append(texts[1] == '"C"')
                decl = []
                i += 1
                continue
            if texts[:1] == ["namespace"] or texts == ["inline", "namespace"] or (texts[:2] == ["inline", "namespace"]):
                scopes.append(in_c)
                decl = []
                i += 1
                continue
            extern_c = in_c or (len(texts) >= 2 and texts[0] == "extern" and texts[1] == '"C"')
            func_like = ("(" in texts and "=" not in texts
                         and not any(w in texts for w in ("struct", "class", "union", "enum")))
            if func_like and texts[0] != "template":
                fn = _parse_function(decl, extern_c)
                if fn is not None:
                    funcs.append(fn)
            i = _skip_balanced(toks, i, "{", "}")
            # A function body ends the declaration; a struct body or an
            # initializer is followed by declarators and ';', which resets.
            decl = [] if func_like else [_Tok("ident", "__skipped__", t.line)]
            continue
        decl.append(t)
        i += 1
    return funcs


def cuda_kernels(src: str) -> tuple[dict[str, Function], list[str]]:
    """The extern "C" __global__ definitions in src, by name, plus the names
    of __global__ functions that lack C linkage (for a helpful error)."""
    kernels: dict[str, Function] = {}
    mangled: list[str] = []
    for f in parse_functions(src):
        if "__global__" not in f.specifiers:
            continue
        if f.extern_c:
            kernels[f.name] = f
        else:
            mangled.append(f.name)
    return kernels, mangled


def c_functions(src: str) -> dict[str, Function]:
    """The non-static top-level function definitions of a C source."""
    out: dict[str, Function] = {}
    for f in parse_functions(src):
        if "static" in f.specifiers:
            continue
        if "inline" in f.specifiers and "extern" not in f.specifiers:
            continue  # a C99 inline definition emits no symbol
        out[f.name] = f
    return out

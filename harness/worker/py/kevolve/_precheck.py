"""main.cpp checked on its own before a CUDA build that cannot bind.

Most of CUDA-L1's published load_inline kernels (47 of the 66 calls in the
throughput set) pass `cpp_sources=""` or declarations of other names, and
`functions=` names a function only the CUDA source declares; others write
their own PYBIND11_MODULE in cpp_sources and pass `functions=` too. torch's
main.cpp (cpp_sources and the m.def block it generates) then cannot
compile: "'forward' was not declared in this scope", "redefinition of
PyInit_...". ninja builds main.cpp
and the CUDA unit side by side, so every such build still pays for
cudafe++, cicc and the host compile of the CUDA unit (20-60 s of CPU) for
an error main.cpp alone shows in a few seconds; the candidate then falls
back to PyTorch or fails.

Where a bound function is named nowhere in cpp_sources, or cpp_sources
has a module block of its own, check_main compiles main.cpp exactly as
torch writes it, with torch's own flags, for syntax only. Only a failure
that shows that cause ends the build there, with torch's "Error building extension" RuntimeError: a unit
that fails -fsyntax-only fails the real compile too, so no build that
would have succeeded is stopped. Anything else (it compiles, it fails for
another reason, the check cannot run) goes on to torch's build as before.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

from . import _pch
from ._bindings import blank_comments_and_strings
from ._cache import run_bounded

_CHECK_TIMEOUT_S = 300


def _names(functions) -> list[str] | None:
    if isinstance(functions, str):
        return [functions]
    if isinstance(functions, (list, dict)) and all(isinstance(f, str) for f in functions):
        return list(functions)
    return None


def undeclared(cpp_sources, functions) -> list[str]:
    """The functions= names cpp_sources never names as a call or
    declaration would (comments and strings aside)."""
    names = _names(functions)
    cpp = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources or [])
    if not names or not all(isinstance(c, str) for c in cpp):
        return []
    code = blank_comments_and_strings("\n".join(cpp))
    return [n for n in names if not re.search(r"\b%s\s*\(" % re.escape(n), code)]


def _own_module_block(cpp_sources) -> bool:
    cpp = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources or [])
    return all(isinstance(c, str) for c in cpp) and "PYBIND11_MODULE" in blank_comments_and_strings("\n".join(cpp))


def torch_main_cpp(cpp_sources, functions, error_handling: bool, implicit_headers: bool) -> str:
    """main.cpp as torch 2.x's load_inline writes it (its header, the
    sources, the module block it generates for functions)."""
    cpp = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources or [])
    lines = (["#include <torch/extension.h>"] if implicit_headers else []) + cpp
    fns = {f: f for f in ([functions] if isinstance(functions, str) else functions)} if not isinstance(functions, dict) else functions
    lines.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
    for name, doc in fns.items():
        fn = "torch::wrap_pybind_function(%s)" % name if error_handling else name
        lines.append('m.def("%s", %s, "%s");' % (name, fn, doc))
    lines.append("}")
    return "\n".join(lines)


def check_main(a: dict) -> str | None:
    """The compiler's errors where main.cpp of this load_inline call (its
    bound arguments, PCH flags included) cannot bind one of its functions;
    None where it can, or where that is not known."""
    if not a.get("cuda_sources") or a.get("is_standalone") or a.get("sycl_sources"):
        return None
    # What gives the failure away: a bound name main.cpp never declares
    # (the compiler then quotes it), or a module block of the sources' own
    # beside torch's (a second PyInit_).
    signs = [re.compile(r"[‘'`]%s[’']" % re.escape(n)) for n in undeclared(a.get("cpp_sources"), a.get("functions"))]
    if a.get("functions") is not None and _own_module_block(a.get("cpp_sources")):
        signs.append(re.compile(r"redefinition of [‘'`][^’']*PyInit_"))
    extra = a.get("extra_cflags") or []
    incs = a.get("extra_include_paths") or []
    if not signs or not isinstance(extra, (list, tuple)) or not isinstance(incs, (list, tuple)):
        return None
    cuda = True if a.get("with_cuda") is None else bool(a.get("with_cuda"))
    got = _pch.torch_flags(cuda, [str(f).strip() for f in extra], [str(p).strip() for p in incs])
    if got is None:
        return None
    cxx, flags = got
    src = torch_main_cpp(a.get("cpp_sources"), a.get("functions"), bool(a.get("with_pytorch_error_handling", True)),
                         not a.get("no_implicit_headers"))
    with tempfile.TemporaryDirectory(prefix="kevolve-main-check-") as tmp:
        path = os.path.join(tmp, "main.cpp")
        with open(path, "w") as f:
            f.write(src)
        try:
            r = run_bounded([cxx, *flags, "-DTORCH_EXTENSION_NAME=%s" % a.get("name", "kevolve_check"), "-fsyntax-only", path],
                            _CHECK_TIMEOUT_S, cwd=tmp)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if r.returncode == 0 or not any(sign.search(r.stderr) for sign in signs):
        return None
    return r.stderr.replace(path, "main.cpp")[-8000:]

"""Builds each load_inline call of candidate files with plain torch, no kevolve.

usage: regress_build_check.py CANDIDATE.py...

Independent evidence for the regression table (regress.tsv): whether a
third-party kernel's own extension builds under this machine's torch, with
nothing of the harness in the way (no load_inline patch, no precompiled
header, no light headers, a fresh build folder). The candidate is not run:
its load_inline calls are read from the source (string and list literals,
and names bound to them), since most only build when a GPU is present.
Off a GPU, point CUDA_HOME at a toolkit (the nvidia-cuda-nvcc wheel's
folder will do) and set TORCH_CUDA_ARCH_LIST (9.0 for the H100): compile
errors need no device; a link or import that needs the driver fails after
them and is reported as such.

Prints, per call, `built`, `FAILED to compile` (a unit did not compile:
the kernel's failure on any machine with this torch), or `compiled; link
or import failed here` (this machine may lack the driver), with the error
lines. Exits 1 when any call did not build.
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

_ERROR = re.compile(r"(error|FAILED|cannot find|undefined reference)", re.I)
# ninja's line for a unit that did not compile ("FAILED: main.o", since
# ninja 1.12 "FAILED: [code=1] cuda.cuda.o"); the link's target is the .so.
_UNIT_FAILED = re.compile(r"^FAILED: (\[code=\d+\] )?\S+\.o\s*$")


def _literals(tree):
    """name -> [(line, value)] for every `name = <literal>` in the file."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            found.setdefault(node.targets[0].id, []).append((node.lineno, value))
    return found


def _resolve(expr, line, names):
    """A keyword's value: a literal, the last literal bound to a name before
    the call, or lists and `+` of those."""
    try:
        return ast.literal_eval(expr)
    except ValueError:
        pass
    if isinstance(expr, ast.Name) and expr.id in names:
        before = [v for ln, v in names[expr.id] if ln < line] or [v for _, v in names[expr.id]]
        return before[-1]
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [_resolve(e, line, names) for e in expr.elts]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _resolve(expr.left, line, names) + _resolve(expr.right, line, names)
    raise ValueError("cannot read %s at line %d" % (ast.unparse(expr), line))


def _name_or(keyword, line, names):
    """_resolve, except that a name made at run time (an f-string with the
    pid, say) is replaced: it does not change what is built."""
    try:
        return _resolve(keyword.value, line, names)
    except ValueError:
        if keyword.arg == "name":
            return "kb_build_check_%d" % line
        raise


def calls(path):
    """(line, kwargs or the reason they cannot be read) for every
    load_inline(...) call in the file."""
    tree = ast.parse(open(path).read(), path)
    names = _literals(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if (isinstance(fn, ast.Name) and fn.id == "load_inline") or (isinstance(fn, ast.Attribute) and fn.attr == "load_inline"):
            try:
                yield node.lineno, {k.arg: _name_or(k, node.lineno, names) for k in node.keywords if k.arg}
            except ValueError as e:
                yield node.lineno, str(e)


def build(kwargs):
    """None when the extension built and imported, else torch's error text
    and, where ninja stopped at the first failed unit, every unit's errors
    (`ninja -k 0` again in the same folder)."""
    import torch.utils.cpp_extension as ext
    folder = tempfile.mkdtemp(prefix="kb_build_check_")
    kwargs = dict(kwargs, verbose=False, build_directory=folder)
    try:
        ext.load_inline(**kwargs)
        return None
    except Exception as e:  # noqa: BLE001 - any failure is the evidence we print
        err = "%s: %s" % (type(e).__name__, e)
    if os.path.exists(os.path.join(folder, "build.ninja")):
        again = subprocess.run(["ninja", "-k", "0"], cwd=folder, capture_output=True, text=True)
        err += "\n" + again.stdout + again.stderr
    return err


def _report(err):
    """The status and the lines that say why: a unit that did not compile is
    the kernel's failure; a link or import that fails after every unit
    compiled may be this machine's (no driver, no GPU)."""
    if err is None:
        return "built", []
    lines = err.splitlines()
    hits = []
    for ln in lines:
        if _ERROR.search(ln) and ln not in hits:
            hits.append(ln)
    status = "FAILED to compile" if any(_UNIT_FAILED.match(ln) for ln in lines) else "compiled; link or import failed here"
    return status, (hits or lines)[:40]


def main():
    import torch
    failed = False
    print("torch %s, CUDA_HOME=%s, TORCH_CUDA_ARCH_LIST=%s" % (
        torch.__version__, os.environ.get("CUDA_HOME"), os.environ.get("TORCH_CUDA_ARCH_LIST")))
    for path in sys.argv[1:]:
        for line, kwargs in calls(path):
            if isinstance(kwargs, str):
                print("== %s:%d load_inline: SKIPPED (%s)" % (path, line, kwargs))
                continue
            status, why = _report(build(kwargs))
            print("== %s:%d load_inline(name=%r, functions=%r): %s" % (
                path, line, kwargs.get("name"), kwargs.get("functions"), status))
            print("\n".join("    " + ln[:400] for ln in why))
            failed = failed or status != "built"
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""A call path per signature, made once at load time.

_args.convert checks and converts every argument on every call: about
12 µs for a four-argument C function whose ctypes call costs 1.3 µs.
Most of that is work that depends only on the signature (which checks,
which ctypes type, which dtypes a pointee accepts), so it is done here
once: each function gets a checker written for its parameters, which
tests each argument in a line or two (a tensor's type, dtype, device,
contiguity and alignment; a scalar's exact type and range) and passes
plain ints and floats to a ctypes function whose argtypes are set.

Anything that is not the common case (None or a raw address for a
pointer, an int for a float, a numpy integer, a half scalar, a wrong
dtype, a strided view, the wrong arity) falls through to _args.convert,
which converts it or raises the same clear error as before: the errors
are convert's, by construction.

The generated source is made from fixed templates and argument indices
only; no text of the kernel's source (names, types) goes into it.
"""

from __future__ import annotations

import ctypes

from . import _args
from ._sig import Function

def argtypes(fn: Function) -> list | None:
    """The ctypes argtypes for fn, or None where a parameter has none
    (variadic, or a scalar type Python cannot pass): convert raises then."""
    out = []
    for p in fn.params:
        if p.is_pointer:
            out.append(ctypes.c_void_p)
            continue
        spec = _args.SCALARS.get(p.base)
        if spec is None:
            return None
        out.append(spec[0])
    return out


def _tensor_test(i: int, p, env: dict) -> str:
    """The fast test for a pointer argument a{i}, binding p{i} to its address."""
    spec = _args.POINTEES.get(p.base) if p.pointer == 1 else (None, 1)
    a = f"a{i}"
    test = f"isinstance({a}, _T) and {a}.is_cpu and {a}.is_contiguous()"
    if spec is not None and spec[0] is not None:
        import torch
        env[f"_D{i}"] = frozenset(getattr(torch, n) for n in spec[0] if hasattr(torch, n))
        test += f" and {a}.dtype in _D{i}"
    test += f" and ((p{i} := {a}.data_ptr()) or True)"
    if spec is not None and spec[1] > 1:
        test += f" and not p{i} % {int(spec[1])}"
    return test


def _scalar_test(i: int, p) -> str | None:
    """The fast test for a scalar argument a{i}; None where only convert
    handles its type (half scalars)."""
    ct, kind = _args.SCALARS[p.base]
    a = f"a{i}"
    if kind == "int":
        bits = ctypes.sizeof(ct) * 8
        signed = ct(-1).value == -1
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        return f"type({a}) is int and {lo} <= {a} <= {hi}"
    if kind == "float":
        return f"type({a}) is float"
    if kind == "bool":
        return f"type({a}) is bool"
    return None


def fast_call(fn: Function, cfunc, slow):
    """A function (self, *args) that calls cfunc (argtypes set) after the
    fast tests, or slow(self, args) where they fail; None where the
    signature has no fast path."""
    try:
        import torch
        import torch.autograd.profiler as prof
    except ImportError:  # pragma: no cover - torch is always present in the worker
        return None
    if argtypes(fn) is None:
        return None
    env = {"_T": torch.Tensor, "_f": cfunc, "_slow": slow, "_prof": prof}
    tests, passed = [], []
    for i, p in enumerate(fn.params):
        t = _tensor_test(i, p, env) if p.is_pointer else _scalar_test(i, p)
        if t is None:
            return None
        tests.append(f"({t})")
        passed.append(f"p{i}" if p.is_pointer else f"a{i}")
    n = len(fn.params)
    unpack = f"        {', '.join(f'a{i}' for i in range(n))}, = a\n" if n else ""
    cond = " and ".join(tests) or "True"
    src = (
        "def __call__(self, *a):\n"
        f"    if len(a) == {n} and not _prof._is_profiler_enabled:\n"
        f"{unpack}"
        f"        if {cond}:\n"
        f"            return _f({', '.join(passed)})\n"
        "    return _slow(self, a)\n"
    )
    exec(compile(src, f"<kevolve fast call {len(fn.params)} args>", "exec"), env)  # noqa: S102 - fixed templates, indices only
    return env["__call__"]

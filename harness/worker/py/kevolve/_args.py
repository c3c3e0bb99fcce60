"""Conversion of Python/torch arguments to the C types a kernel declares."""

from __future__ import annotations

import ctypes
import numbers

from ._sig import Function, Param

# Scalar parameter types: normalized name -> (ctypes type, kind).
SCALARS: dict[str, tuple[type, str]] = {}
for _names, _ct, _kind in [
    (("char", "signed char", "int8_t"), ctypes.c_int8, "int"),
    (("unsigned char", "uint8_t"), ctypes.c_uint8, "int"),
    (("short", "int16_t"), ctypes.c_int16, "int"),
    (("unsigned short", "uint16_t"), ctypes.c_uint16, "int"),
    (("int", "int32_t"), ctypes.c_int32, "int"),
    (("unsigned", "uint32_t"), ctypes.c_uint32, "int"),
    # LP64 on both sides (Linux x86-64/aarch64 hosts and CUDA devices): long is 64-bit.
    (("long", "long long", "int64_t", "ssize_t", "ptrdiff_t", "intptr_t", "long long"), ctypes.c_int64, "int"),
    (("unsigned long", "unsigned long long", "uint64_t", "size_t", "uintptr_t"), ctypes.c_uint64, "int"),
    (("float",), ctypes.c_float, "float"),
    (("double",), ctypes.c_double, "float"),
    (("bool", "_Bool"), ctypes.c_bool, "bool"),
    (("half", "__half"), ctypes.c_uint16, "half"),
    (("__nv_bfloat16", "nv_bfloat16", "bfloat16", "__hip_bfloat16", "hip_bfloat16"), ctypes.c_uint16, "bf16"),
]:
    for _n in _names:
        SCALARS[_n] = (_ct, _kind)

# Pointee types: normalized name -> (accepted torch dtype names, bytes per element
# of the pointee, used for an alignment check on vector types). None: any dtype.
POINTEES: dict[str, tuple[tuple[str, ...] | None, int]] = {
    "void": (None, 1),
    "float": (("float32",), 4), "float2": (("float32",), 8), "float4": (("float32",), 16),
    "double": (("float64",), 8), "double2": (("float64",), 16),
    "half": (("float16",), 2), "__half": (("float16",), 2),
    "half2": (("float16",), 4), "__half2": (("float16",), 4),
    "__nv_bfloat16": (("bfloat16",), 2), "nv_bfloat16": (("bfloat16",), 2), "bfloat16": (("bfloat16",), 2),
    "__nv_bfloat162": (("bfloat16",), 4), "nv_bfloat162": (("bfloat16",), 4),
    "__hip_bfloat16": (("bfloat16",), 2), "hip_bfloat16": (("bfloat16",), 2), "__hip_bfloat162": (("bfloat16",), 4),
    "_Float16": (("float16",), 2),
    "__nv_fp8_e4m3": (("float8_e4m3fn",), 1), "__nv_fp8_e5m2": (("float8_e5m2",), 1),
    "char": (("int8", "uint8", "bool"), 1), "signed char": (("int8",), 1), "int8_t": (("int8",), 1),
    "unsigned char": (("uint8", "bool"), 1), "uint8_t": (("uint8", "bool"), 1),
    "bool": (("bool",), 1), "_Bool": (("bool",), 1),
    "short": (("int16",), 2), "int16_t": (("int16",), 2),
    "unsigned short": (("uint16", "int16"), 2), "uint16_t": (("uint16", "int16"), 2),
    "int": (("int32",), 4), "int32_t": (("int32",), 4),
    "int2": (("int32",), 8), "int4": (("int32",), 16),
    "unsigned": (("uint32", "int32"), 4), "uint32_t": (("uint32", "int32"), 4),
    "long": (("int64",), 8), "long long": (("int64",), 8), "int64_t": (("int64",), 8),
    "unsigned long": (("uint64", "int64"), 8), "unsigned long long": (("uint64", "int64"), 8),
    "uint64_t": (("uint64", "int64"), 8), "size_t": (("uint64", "int64"), 8),
}


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def _scalar(fn: Function, idx: int, p: Param, v):
    label = f"{fn.name}: argument {idx} ({p.decl})"
    spec = SCALARS.get(p.base)
    if spec is None:
        raise TypeError(f"{label}: parameter type '{p.base}' cannot be passed from Python; "
                        "use a pointer or one of: " + ", ".join(sorted(set(SCALARS))))
    ct, kind = spec
    try:
        import torch
        if isinstance(v, torch.Tensor):
            raise TypeError(f"{label}: expects a scalar but got a torch.Tensor; pass a Python number "
                            "(e.g. t.item()) or declare the parameter as a pointer")
    except ImportError:
        pass
    if kind == "int":
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"{label}: expects an integer, got {type(v).__name__}")
        v = int(v)
        bits = ctypes.sizeof(ct) * 8
        signed = ct(-1).value == -1
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if not lo <= v <= hi:
            raise TypeError(f"{label}: value {v} does not fit in {p.base}")
        return ct(v)
    if kind == "float":
        if not isinstance(v, numbers.Real):
            raise TypeError(f"{label}: expects a real number, got {type(v).__name__}")
        return ct(float(v))
    if kind == "bool":
        if not isinstance(v, (bool, numbers.Integral)):
            raise TypeError(f"{label}: expects a bool, got {type(v).__name__}")
        return ct(bool(v))
    # half / bfloat16 scalars: pass the 16-bit pattern.
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{label}: expects a real number, got {type(v).__name__}")
    import torch
    dt = torch.float16 if kind == "half" else torch.bfloat16
    bits = torch.tensor([float(v)], dtype=dt).view(torch.int16).item() & 0xFFFF
    return ct(bits)


def _pointer(fn: Function, idx: int, p: Param, v, device: str, want_index: int | None):
    label = f"{fn.name}: argument {idx} ({p.decl})"
    if v is None:
        return ctypes.c_void_p(0)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is always present in the worker
        torch = None
    if torch is not None and isinstance(v, torch.Tensor):
        if device == "cuda":
            if not v.is_cuda:
                raise TypeError(f"{label}: tensor is on {v.device}, the kernel needs a CUDA tensor "
                                "(move it with .cuda())")
            if want_index is not None and v.device.index != want_index:
                raise TypeError(f"{label}: tensor is on {v.device}, other arguments are on cuda:{want_index}")
        else:
            if v.device.type != "cpu":
                raise TypeError(f"{label}: tensor is on {v.device}, a C function needs a CPU tensor (.cpu())")
        if not v.is_contiguous():
            raise TypeError(f"{label}: tensor is not contiguous (shape {tuple(v.shape)}, strides "
                            f"{tuple(v.stride())}); pass t.contiguous()")
        spec = POINTEES.get(p.base) if p.pointer == 1 else (None, 1)
        if spec is not None:
            allowed, size = spec
            name = _dtype_name(v)
            if allowed is not None and name not in allowed:
                raise TypeError(f"{label}: tensor dtype is torch.{name} but the parameter points to "
                                f"{p.base} (expects torch.{allowed[0]})")
            ptr = v.data_ptr()
            if size > 1 and ptr % size:
                raise TypeError(f"{label}: data pointer {ptr:#x} is not {size}-byte aligned as {p.base} "
                                "requires (a sliced view? use .clone())")
        return ctypes.c_void_p(v.data_ptr())
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return ctypes.c_void_p(int(v))  # a raw address
    raise TypeError(f"{label}: expects a torch.Tensor (or None / a raw address int), got {type(v).__name__}")


def convert(fn: Function, args: tuple, device: str) -> tuple[list, int | None]:
    """Convert args for fn; returns the ctypes values and, for CUDA, the device
    index the tensors live on (None when no tensor was passed)."""
    if fn.params and fn.params[-1].base == "...":
        raise TypeError(f"{fn.name}: variadic functions cannot be called through the loader")
    if len(args) != len(fn.params):
        raise TypeError(f"{fn.signature()} takes {len(fn.params)} arguments, got {len(args)}")
    want = None
    if device == "cuda":
        for a in args:
            if hasattr(a, "is_cuda") and a.is_cuda:
                want = a.device.index
                break
    out = []
    for i, (p, v) in enumerate(zip(fn.params, args)):
        if p.is_pointer:
            out.append(_pointer(fn, i, p, v, device, want))
        else:
            out.append(_scalar(fn, i, p, v))
    return out, want

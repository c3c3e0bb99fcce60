"""Whether the candidate changed what the reference runs on.

The reference runs in the candidate's process, so a candidate can reach it:
replace a torch function or Tensor method the reference calls
(torch.Tensor.__matmul__ returning zeros, and return zeros itself: both
sides agree, and a wrong kernel passes), set a global that changes the
reference's numerics or speed (torch.set_num_threads(1) or an affinity of
one core makes the eager reference slower on a CPU and the candidate's
speedup larger, as does a garbage collection every few allocations; TF32
or a lower float32 matmul precision makes the reference less exact; a
default dtype of float16 changes the inputs get_inputs() draws), push a
torch mode or a global module hook, register a kernel for an aten op, or
reach the reference model itself (gc finds it) and replace its forward,
register a forward hook on it, or overwrite its weights.

RefGuard records all of that once the reference is loaded and before the
candidate is, and check() compares: after the candidate's import and
construction, and before every call into the reference after the candidate
has run (its forward, get_inputs(), the audits' reference calls, the
reference's timing), so a candidate that changes something and puts it back
between its own calls is caught at the reference call in between. A
change is an integrity_violation (reference_tampered).

What it compares: the identity of every function and class of torch's main
namespaces, of the methods of torch.Tensor, nn.Module and every torch.nn
module class (and the classes they derive from), and of the reference
module's functions, classes and methods (new methods on these classes count:
torch.Tensor.add set on Tensor shadows TensorBase's); torch's numeric and
speed settings (the flags listed in flags()); the reference model's
submodules (class, instance attributes, hooks) and its parameters and
buffers (identity, data pointer, version counter, so an in-place write
counts). It takes well under a millisecond per check for a KernelBench
model. What it cannot see: a write through a raw pointer (ctypes, a custom
kernel) into the reference's weights, which leaves the version counter
alone; the comparisons against the reference and the audits still apply.
"""
import gc
import operator
import os
import sys
import threading

import torch

from evaluate.common import KernelFailure

# torch namespaces a reference's code calls into (module attributes that
# are functions or classes, compared by identity).
_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft", "torch.special",
            "torch.cuda", "torch.autograd", "torch.library", "torch.overrides", "torch._C", "torch._C._VariableFunctions",
            "torch._C._nn", "torch._C._fft", "torch._C._linalg", "torch._C._special", "torch.backends.cuda",
            "torch.backends.cudnn")
# Classes whose own attributes are compared, additions included.
_CLASSES = (torch.Tensor, torch._C.TensorBase, torch.nn.Module, torch.nn.Parameter, torch.autograd.Function)
# Hook dictionaries of an nn.Module instance.
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs",
          "_forward_hooks_always_called", "_state_dict_hooks", "_load_state_dict_pre_hooks")


def is_code(v):
    """Functions, classes and descriptors: what a namespace holds that
    code calls into (its data changes as it is used)."""
    return callable(v) or isinstance(v, (type, staticmethod, classmethod, property))


def flags():
    """torch's settings that change how the reference computes or how fast:
    (label, value) pairs, cheap to read, whose values are plain data made by
    torch (compared with ==) or ids."""
    b = torch.backends
    C = torch._C
    out = [
        ("torch.get_default_dtype()", torch.get_default_dtype()),
        ("torch.are_deterministic_algorithms_enabled()", C._get_deterministic_algorithms()),
        ("torch.utils.deterministic.fill_uninitialized_memory", C._get_deterministic_fill_uninitialized_memory()),
        ("torch.get_num_threads()", torch.get_num_threads()),
        ("torch function modes", C._len_torch_function_stack()),
        ("torch dispatch modes", C._len_torch_dispatch_stack()),
        ("torch.backends.cudnn (enabled, benchmark, deterministic, allow_tf32)",
         (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32)),
        ("torch.backends.cuda.matmul (allow_tf32, fp16 and bf16 reduced-precision reductions)",
         (b.cuda.matmul.allow_tf32, b.cuda.matmul.allow_fp16_reduced_precision_reduction,
          b.cuda.matmul.allow_bf16_reduced_precision_reduction)),
        ("torch.get_float32_matmul_precision()", torch.get_float32_matmul_precision()),
        ("torch.backends.mkldnn.enabled", b.mkldnn.enabled),
        # The process's share of the machine and Python's collector: a
        # candidate could narrow them between its own calls (one core, a
        # lower priority, a collection every few allocations) and leave
        # them so for the reference's.
        ("the CPU affinity (os.sched_getaffinity)", frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None),
        ("the scheduling priority (os.getpriority)", os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else None),
        ("gc.isenabled() and gc.get_threshold()", (gc.isenabled(), gc.get_threshold())),
        # By identity: a hook object could define an __eq__ of its own.
        ("sys.gettrace/getprofile (and threading's)",
         tuple(map(id, (sys.gettrace(), sys.getprofile(), threading.gettrace(), threading.getprofile())))),
    ]
    # Settings newer or backend-specific torch builds have.
    for label, get in (("torch.backends.fp32_precision", lambda: b.fp32_precision),
                       ("torch.backends.cuda.matmul.fp32_precision", lambda: b.cuda.matmul.fp32_precision),
                       ("torch.backends.cudnn.conv.fp32_precision", lambda: b.cudnn.conv.fp32_precision),
                       ("torch.backends.cudnn.rnn.fp32_precision", lambda: b.cudnn.rnn.fp32_precision),
                       ("torch.backends.cuda sdp backends (flash, mem_efficient, math, cudnn)",
                        lambda: (b.cuda.flash_sdp_enabled(), b.cuda.mem_efficient_sdp_enabled(), b.cuda.math_sdp_enabled(),
                                 b.cuda.cudnn_sdp_enabled())),
                       ("torch.backends.cuda.preferred_blas_library()", lambda: str(b.cuda.preferred_blas_library())),
                       ("torch.get_default_device()", lambda: str(torch.get_default_device()))):
        try:
            out.append((label, get()))
        except Exception:  # noqa: BLE001 - not in this build
            pass
    mm = sys.modules.get("torch.nn.modules.module")
    if mm is not None:
        out.append(("global nn.Module hooks", tuple((k, len(v)) for k, v in sorted(vars(mm).items())
                                                    if k.startswith("_global_") and hasattr(v, "__len__") and len(v))))
    return out


def _computes(key):
    """Whether a dispatch key runs an op's computation for real tensors
    (torch registers meta, functionalization and tracing kernels of its own
    as it lazily imports)."""
    return key in ("", "CPU", "CUDA", "HIP", "XPU", "MPS", "PrivateUse1") or key.startswith(("Composite", "Autograd"))


def _aten_impls():
    """Kernels registered through torch.library for aten ops (keys are
    "namespace/op/dispatch key"; torch's compiler registers prims ops of
    its own as it first runs)."""
    out = set()
    for k in list(getattr(torch.library, "_impls", ())):
        parts = k.split("/")
        if parts[0] == "aten" and _computes(parts[-1] if len(parts) > 2 else ""):
            out.add(k)
    return frozenset(out)


def _nn_classes():
    """Every torch.nn module class and the classes it derives from."""
    seen = {}
    for v in list(vars(torch.nn).values()):
        if isinstance(v, type) and issubclass(v, torch.nn.Module):
            for c in v.__mro__:
                if c is not object:
                    seen[id(c)] = c
    return list(seen.values())


def _data_ptr(t):
    try:
        return t.data_ptr()
    except Exception:  # noqa: BLE001 - sparse and other layouts without one
        return 0


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _torch_made(new, old):
    """Whether a replacement is torch's own doing: torch wraps some of its
    functions as it lazily imports (torch._dynamo wraps torch.manual_seed
    and, at its first compile, nn.Module.__init__). The chain of __wrapped__
    must end at the original, or at a function whose code is in torch's own
    files: a candidate's function wrapped by a torch decorator ends at the
    candidate's code. (A code object given a forged file name would pass;
    the comparisons against the reference still apply.)"""
    f = new
    for _ in range(16):
        if f is old:
            return True
        inner = getattr(f, "__wrapped__", None)
        if inner is None:
            break
        f = inner
    code = getattr(f, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(_TORCH_DIR)


class _Table:
    """Code attributes of namespaces, held by reference and compared by
    identity only (operator.is_: an object with an __eq__ of its own must
    not compare equal to what it replaced). Changes torch makes itself
    (_torch_made) become the new baseline."""

    def __init__(self):
        self.rows = []  # [label, live namespace, keys, values, all keys or None]

    def add(self, label, ns, whole):
        """whole: additions count too (classes); a module may gain
        attributes as it lazily imports."""
        d = ns if isinstance(ns, dict) else vars(ns)
        items = [(k, v) for k, v in list(d.items()) if is_code(v)]
        self.rows.append([label, d, [k for k, _ in items], [v for _, v in items], set(d) if whole else None])

    def changes(self):
        out = []
        for row in self.rows:
            label, d, keys, values, every = row
            if not all(map(operator.is_, map(d.get, keys), values)):
                for i, (k, v) in enumerate(zip(keys, values)):
                    now = d.get(k)
                    if now is v:
                        continue
                    if now is not None and _torch_made(now, v):
                        values[i] = now
                    else:
                        out.append("replaced %s.%s" % (label, k))
            if every is not None and len(d) != len(every):
                for k in sorted(k for k in list(d) if k not in every):
                    v = d.get(k)
                    if not is_code(v) or _torch_made(v, None):
                        every.add(k)
                    else:
                        out.append("added %s.%s" % (label, k))
        return out


class _ModelState:
    """The reference model's modules and tensors as last seen: each
    module's instance attributes that are code (an instance forward set on
    it, a function stored as an attribute) and its child modules, by
    identity, additions included; its class; its hook counts; its
    parameters and buffers (the tensor, its data pointer, its version
    counter)."""

    def __init__(self, model):
        named = list(model.named_modules(remove_duplicate=False))
        self.mods = [m for _, m in named]
        names = ["the reference model" + ("." + n if n else "") for n, _ in named]
        self.table = _Table()
        for n, m in zip(names, self.mods):
            self.table.add(n, m, True)
            self.table.add(n, m._modules, True)  # its children by name
        self.classes = tuple(type(m) for m in self.mods)
        self.hooks = [d for m in self.mods for h in _HOOKS if isinstance(d := vars(m).get(h), dict)]
        self.hook_counts = tuple(map(len, self.hooks))
        self.slots = [(n + "." + k, d, k, t) for n, m in zip(names, self.mods) for d in (m._parameters, m._buffers)
                      for k, t in d.items() if t is not None]
        self.tensor_state = self._tensor_state()

    def _tensor_state(self):
        return tuple((_data_ptr(t), t._version) for _, _, _, t in self.slots)

    def changes(self):
        out = self.table.changes()
        if not all(map(operator.is_, map(type, self.mods), self.classes)):
            out.append("changed the class of a module of the reference model")
        if tuple(map(len, self.hooks)) != self.hook_counts:
            out.append("registered hooks on the reference model")
        if not all(d.get(k) is t for _, d, k, t in self.slots) or self._tensor_state() != self.tensor_state:
            now = self._tensor_state()
            bad = [n for (n, d, k, t), s0, s1 in zip(self.slots, self.tensor_state, now) if d.get(k) is not t or s0 != s1]
            out.append("changed the reference model's parameters or buffers %s (replaced or written in place)" % bad[:3])
        return out


class RefGuard:
    """See the module docstring. checks: the evaluation's Check list;
    check() adds reference_tampered to it and ends the evaluation."""

    def __init__(self, checks, ref_mod):
        self.checks = checks
        t = _Table()
        for name in _MODULES:
            m = sys.modules.get(name)
            if m is not None:
                t.add(name, m, False)
        for c in list(_CLASSES) + _nn_classes():
            t.add(c.__module__ + "." + c.__qualname__, c, True)
        t.add(ref_mod.__name__, ref_mod, False)
        for v in list(vars(ref_mod).values()):
            if isinstance(v, type) and v.__module__ == ref_mod.__name__:
                t.add(ref_mod.__name__ + "." + v.__qualname__, v, True)
        self.table = t
        self.model = None
        self._record()

    def watch(self, model):
        """Records the reference model as constructed."""
        self.model = model
        self._record()

    def settle(self):
        """After a reference call: what the reference itself changed (a
        model that updates its own buffers or attributes in forward) is the
        new baseline; what the candidate changed was caught by the check
        before the call. Usually nothing changed, and a check says so."""
        if self.changes():
            self._record()

    def _record(self):
        self.flags = flags()
        self.impls = _aten_impls()
        self.n_impls = len(getattr(torch.library, "_impls", ()))
        self.model_state = _ModelState(self.model) if self.model is not None else None

    def changes(self):
        out = self.table.changes()
        now = dict(flags())
        for label, v in self.flags:
            if now.get(label, v) != v:
                out.append("changed %s: %r -> %r" % (label, v, now.get(label)))
        # torch registers kernels of its own as it lazily imports; only
        # new ones for aten ops count.
        n = len(getattr(torch.library, "_impls", ()))
        if n != self.n_impls:
            added = sorted(_aten_impls() - self.impls)
            if added:
                out.append("registered kernels for torch's own operators: %s" % added[:3])
            else:
                self.n_impls = n  # torch's own: not compared again
        if self.model_state is not None:
            out += self.model_state.changes()
        return out

    def check(self, where):
        """Ends the evaluation as an integrity_violation if anything the
        reference runs on changed; where names the moment ("before a
        reference call", "after the candidate's import")."""
        ch = self.changes()
        if ch:
            self.checks.add("reference_tampered", False, "%s: the candidate changed what the reference runs on: %s; a kernel must leave "
                            "torch, the process's settings and the reference model as it found them" % (where, "; ".join(ch[:6])),
                            "integrity_violation")
            raise KernelFailure("integrity_violation", "integrity", "")

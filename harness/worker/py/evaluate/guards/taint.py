"""Whether a child that ran one evaluation may run the next.

A fresh process per evaluation costs a CUDA context: made and torn down by
the driver one process at a time across a host's GPUs, about 0.27 s per
evaluation, which capped two H200s at 1.13x one (TestMultiGPUThroughput). A
child that keeps its context for the next evaluation on the same device
avoids that, but a candidate's Python runs in it, and whatever it changed
would carry into the next evaluation: a patched torch function could slow
the next reference (inflating the next candidate's speedup) or hide the
next candidate's error.

So a child is reused only when nothing it can reach from Python changed:
the functions and classes of torch and its main namespaces, of the
standard modules the checks use, of Triton and of the harness itself;
torch's global flags, mode stacks, global module hooks and operator
registrations; trace and profile hooks, import hooks, signal handlers and
the environment; sys's streams and hooks. Any change, a thread left
running (Python or native), device memory still held, or a verdict other
than pass or incorrect, and the child exits as before. What this cannot
see: a candidate that writes into the interpreter's or a library's memory
through ctypes, or that speaks the worker's protocol itself (as it could
for its own evaluation in a fresh child too). KEVOLVE_FRESH_PROCESS=1
(EvalConfig.Reuse = ReuseNever) gives every evaluation a process of its
own."""
import gc
import operator
import os
import signal
import sys
import threading
# Imported so they are in sys.modules when the snapshot is taken: a module
# the candidate imported first would have no snapshot to compare with.
import ctypes  # noqa: F401
import importlib  # noqa: F401
import math  # noqa: F401
import random  # noqa: F401
import time  # noqa: F401
import types

import torch

from evaluate.guards.tamper import flags as tamper_flags, is_code

# Namespaces whose attributes are compared by identity. Modules may gain
# submodules (lazy imports) but no other attribute; classes gain nothing.
_MODULES = ("builtins", "math", "random", "time", "os", "gc", "threading", "signal", "importlib", "ctypes",
            "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft", "torch.special",
            "torch.cuda", "torch.autograd", "torch.library", "torch.overrides", "torch._C", "torch._C._VariableFunctions",
            "torch.utils.cpp_extension", "triton", "triton.language", "triton.runtime", "triton.runtime.jit",
            "triton.compiler", "numpy", "cupy")
_CLASSES = (torch.Tensor, torch._C.TensorBase, torch.nn.Module, torch.nn.Parameter, torch.cuda.Event, torch.cuda.Stream,
            torch.device, torch.Generator, torch.autograd.Function)
# The harness's own modules: every function and class they define.
_HARNESS = ("evaluate", "kevolve", "worker", "__main__")


def _is_harness(name):
    return name.split(".")[0] in _HARNESS


_SIGNALS = (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE, signal.SIGSEGV)


def _namespaces():
    out = []
    for name in _MODULES:
        m = sys.modules.get(name)
        if m is not None:
            out.append((name, m, "module"))
    for c in _CLASSES:
        out.append((c.__module__ + "." + c.__qualname__, c, "class"))
    for name, m in list(sys.modules.items()):
        if m is not None and _is_harness(name):
            out.append((name, m, "harness"))
    return out


def _flags():
    """Settings the next evaluation runs under: torch's and the process's
    share of the machine (evaluate.guards.tamper.flags, the ones a candidate must
    not change under its own reference), and more that only a next
    evaluation would feel."""
    f = dict(tamper_flags())
    f["grad"] = torch.is_grad_enabled()
    f["environ"] = tuple(sorted(os.environ.items()))
    # Kernels registered for torch's own operators (torch.library
    # impl("aten::mm", ...)) would run in place of the next reference's.
    f["aten_impls"] = frozenset(k for k in getattr(torch.library, "_impls", ()) if k.split("/")[0] in ("aten", "prims"))
    return f


def _hooks():
    """Objects the next evaluation's code would call into, compared by
    identity (one of the candidate's could define __eq__), by name."""
    return {
        "sys_hooks": (sys.stdout, sys.stderr, sys.stdin, sys.excepthook, sys.displayhook, sys.unraisablehook,
                      threading.excepthook, sys.breakpointhook),
        "import_hooks": tuple(sys.meta_path) + (None,) + tuple(sys.path_hooks),
        "signals": tuple(signal.getsignal(s) for s in _SIGNALS),
        "gc_callbacks": tuple(gc.callbacks),
    }


def _compared(kind, v):
    """Modules' data (caches, counters, torch.cuda's initialized flag)
    changes as they are used; their functions and classes must not. Class
    attributes are all compared."""
    return kind == "class" or is_code(v)


def _ident(v):
    """A function is the same only with the same code: a candidate can swap
    a function's __code__ (or write its func_code slot with ctypes) and
    leave the object in place."""
    return (id(v), id(v.__code__)) if type(v) is types.FunctionType else id(v)


def _allocated():
    return torch.cuda.memory_allocated() if torch.cuda.is_initialized() else 0


def _tasks():
    """Every thread of the process by id, native ones included (a C++
    extension's std::thread never shows in threading.enumerate())."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def _task_name(tid):
    try:
        with open("/proc/self/task/%s/comm" % tid) as f:
            return f.read().strip()
    except OSError:
        return tid


class Snapshot:
    """What a child looked like before an evaluation."""

    def __init__(self):
        self.ids = {}
        self.kinds = {}
        for name, ns, kind in _namespaces():
            self.kinds[name] = kind
            for k, v in list(vars(ns).items()):
                if _compared(kind, v):
                    self.ids[(name, k)] = _ident(v)
        self.flags = _flags()
        self.hooks = _hooks()
        self.sys_path = list(sys.path)
        self.threads = {t.ident for t in threading.enumerate()}
        self.tasks = _tasks()
        self.allocated = _allocated()

    def tidy(self):
        """Undoes what every evaluation itself changes: the job's directory
        on sys.path and the modules loaded from it."""
        sys.path[:] = self.sys_path
        for name in ("kevolve_candidate", "kevolve_reference"):
            sys.modules.pop(name, None)

    def changes(self):
        """What differs now, as short strings ([] when the child is clean)."""
        out = []
        now = {}
        for name, ns, kind in _namespaces():
            for k, v in list(vars(ns).items()):
                if not _compared(kind, v):
                    continue
                now[(name, k)] = v
                old = self.ids.get((name, k))
                if old is None:
                    if name not in self.kinds:
                        continue  # a module imported during the evaluation
                    if kind == "module" and isinstance(v, type(sys)):
                        continue  # a lazily imported submodule
                    if kind == "harness":
                        continue  # a harness module's new function (lazy definitions)
                    out.append("added %s.%s" % (name, k))
                elif old != _ident(v):
                    out.append("replaced %s.%s" % (name, k))
        for key in self.ids:
            if key not in now:
                out.append("removed %s.%s" % key)
        flags = _flags()
        for k, v in self.flags.items():
            if flags.get(k) != v:
                out.append("changed %s" % k)
        for k, objs in _hooks().items():
            was = self.hooks[k]
            if len(objs) != len(was) or not all(map(operator.is_, objs, was)):
                out.append("changed %s" % k)
        alive = [t.name for t in threading.enumerate() if t.ident not in self.threads and t.is_alive()]
        if alive:
            out.append("threads left running: %s" % alive[:5])
        extra = sorted(_tasks() - self.tasks)
        if extra:
            out.append("native threads left running: %s" % [_task_name(t) for t in extra[:5]])
        held = _allocated() - self.allocated
        if held > (64 << 20):
            out.append("%.0f MiB of device memory still allocated" % (held / 2**20))
        return out


def reusable(snap, verdict):
    """(ok, why): may this child run another evaluation?"""
    if verdict not in ("pass", "incorrect"):
        return False, "verdict %s" % verdict
    try:
        if torch.cuda.is_initialized():
            # A context left in an error state (sticky after a fault) raises
            # here: such a child never runs another evaluation.
            torch.cuda.synchronize()
        snap.tidy()
        # Garbage the candidate left goes now, so a finalizer of its cannot
        # act after the comparison.
        gc.collect()
        gc.collect()
        ch = snap.changes()
    except BaseException as e:  # noqa: BLE001 - anything odd: a fresh process
        return False, "taint check failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
    if ch:
        return False, "; ".join(ch[:5])
    return True, ""

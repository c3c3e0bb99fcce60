"""Guarded dispatch of a model's regions to evolved kernels (kevolve_kernels)."""
import copy
import importlib.util
import math
import os
import sys
import weakref

import torch
import torch.nn as nn

from . import _patterns as mp


def _load_kernel(path, init):
    name = "kevolve_kernels_k_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.ModelNew(*init).eval()


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def init_matches(init, want):
    """The constructor arguments a call would use match an entry's: the
    same numbers, and each weight of the shape it was verified with (an
    entry of an older registry names a weight without its shape)."""
    if len(init) != len(want):
        return False
    for v, w in zip(init, want):
        if isinstance(v, torch.Tensor):
            if isinstance(w, dict) and list(v.shape) != w.get("shape"):
                return False
        elif not _same(v, w):
            return False
    return True


class Guarded(nn.Module):
    """One region: its kernel where an entry matches the call exactly, its
    original operators (fallback) everywhere else."""

    def __init__(self, root, region, fallback, entries, base):
        super().__init__()
        self.fallback = fallback
        self.sig, self.where = region.sig, region.where
        ins = region.inputs()
        self._call = [("in", ins.index(ref)) if kind == "node" else (kind, ref) for kind, ref in region.call]
        self._init = region.init
        self._root = weakref.ref(root)
        self._entries = entries
        self._base = base
        self._kernels = {}
        self.hits = 0
        self.fallbacks = 0

    def _tensor(self, kind, ref, inputs):
        if kind == "in":
            return inputs[ref]
        if kind == "mparam":  # a module-level region: the weight of the module it wraps
            return getattr(self.fallback, ref)
        return mp.param(self._root(), ref)

    def _value(self, ref):
        if isinstance(ref, tuple):
            return self._tensor(ref[0], ref[1], ())
        return ref

    def _match(self, args):
        if torch.is_grad_enabled() and any(a.requires_grad for a in args):
            return None  # the kernels have no backward
        first = args[0]
        if any(a.device != first.device or not a.is_contiguous() for a in args):
            return None
        shapes = [list(a.shape) for a in args]
        dtype = str(first.dtype).replace("torch.", "")
        arch = mp.device_arch(first.device)
        init = [self._value(v) for v in mp.resolved_init(self, first.dtype)]
        for i, e in enumerate(self._entries):
            if e["shapes"] == shapes and e["dtype"] == dtype and e["arch"] == arch and init_matches(init, e["init"]):
                return i, init
        return None

    def forward(self, *inputs):
        args = [self._tensor(k, r, inputs) for k, r in self._call]
        m = self._match(args) if all(isinstance(a, torch.Tensor) for a in args) else None
        if m is None:
            self.fallbacks += 1
            return self.fallback(*inputs)
        i, init = m
        k = self._kernels.get(i)
        if k is None:
            k = self._kernels[i] = _load_kernel(os.path.join(self._base, self._entries[i]["kernel"]), init)
        self.hits += 1
        if not torch.autograd.profiler._is_profiler_enabled:
            return k(*args)
        # The label is what the engagement check looks for in a trace
        # (tens of µs a call, so only under a profiler).
        with torch.profiler.record_function("kevolve_kernels::e_" + self._entries[i].get("id", "")):
            return k(*args)

    # resolved_init reads region.sig and region.init: a Guarded is its own region.
    @property
    def init(self):
        return self._init


def patch_with(model, reg, base, arch=None):
    """model traced, each region with entries for its signature replaced by
    a Guarded (arch: keep only entries of this arch; None = all, the guard
    picks by the tensors' device)."""
    entries = [e for e in reg.get("entries", []) if arch is None or e["arch"] == arch]
    try:
        gm = mp.trace(model)
    except Exception:  # noqa: BLE001 - not traceable: the optimizer fell back to modules too
        return _patch_modules(copy.deepcopy(model), entries, base)
    for k, r in enumerate(mp.find_regions(gm)):
        mine = [e for e in entries if e["op"] == r.sig]
        if not mine:
            continue
        g = Guarded(gm, r, mp.fallback_module(gm, r), mine, base)
        mp.replace(gm, r, "kevolve_%d_%s" % (k, r.sig), g)
    gm.graph.lint()
    gm.recompile()
    return gm


def _patch_modules(model, entries, base):
    """Module replacement, for a model torch.fx cannot trace: each
    normalization or Linear module with entries is wrapped in a Guarded
    whose fallback is the module itself."""
    for r in mp.module_regions(model):
        mine = [e for e in entries if e["op"] == r.sig]
        parent, _, child = r.where.rpartition(".")
        if not mine or not child:
            continue
        setattr(model.get_submodule(parent) if parent else model, child, Guarded(model, r, r.module, mine, base))
    return model


def stats(model):
    """[{op, where, hits, fallbacks}] of a patched model's guarded regions."""
    return [{"op": m.sig, "where": m.where, "hits": m.hits, "fallbacks": m.fallbacks}
            for m in model.modules() if isinstance(m, Guarded)]

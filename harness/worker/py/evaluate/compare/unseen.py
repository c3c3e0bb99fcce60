"""Shapes the candidate was never shown (issue 32, item 7): the judge's
re-check runs the candidate at other sizes where the problem allows it.

A candidate that hard-codes the shown shape (a view with literal sizes, a
grid precomputed for the shown batch, outputs replayed by address or value)
passes every trial at that shape and fails at another. Peers judge on such
inputs (AgentKernelArena's unseen configurations, KernelEvolve's
out-of-distribution shapes), so a pass here should hold there too.

Where the sizes come from, without the problem saying anything new:
- a corpus problem's other SHAPES entries (the dict the module selected,
  `_S = SHAPES[...]`, takes another entry's values; the dtype stays);
- module-level sizes that get_inputs() reads (KernelBench's `batch_size =
  16`, `dim = 16384`, or a key of the selected SHAPES dict), one at a time,
  halved or doubled (x2 or x0.5 keeps the alignment an honest kernel may
  rely on: a multiple of 128 stays one).
A size is only varied where that is safe: get_init_inputs() returns the
same with it changed (the candidate's model was built once, with the
shown constructor arguments), the reference's Model code never reads it
(the candidate's module keeps its own copy), the inputs grow at most
MAX_GROWTH-fold and change shape. A variant the reference fails on, or
gives non-finite outputs at, is left out and said so: never the
candidate's fault."""
import types

import torch

from evaluate.common import tensors_of

MAX_VARIANTS = 2
MAX_GROWTH = 2.0


def _code_names(code):
    """Global names a code object and the code objects nested in it read."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _code_names(c)
    return out


def _reads(mod, fn, seen=None):
    """Module globals fn reads, following the module's own functions it calls."""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return set()
    seen.add(code)
    names = _code_names(code)
    for n in list(names):
        g = getattr(mod, n, None)
        if isinstance(g, types.FunctionType) and getattr(g, "__module__", None) == mod.__name__:
            names |= _reads(mod, g, seen)
    return names


def _model_reads(mod):
    cls = getattr(mod, "Model", None)
    names = set()
    for klass in getattr(cls, "__mro__", ()):
        if getattr(klass, "__module__", None) != mod.__name__:
            continue
        for v in vars(klass).values():
            f = getattr(v, "__func__", v)
            if isinstance(f, types.FunctionType):
                names |= _reads(mod, f)
    return names


def _size(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


class Knob:
    """One size: a module global, or a key of a module-level dict."""

    def __init__(self, mod, name, key=None):
        self.mod, self.name, self.key = mod, name, key

    def get(self):
        v = getattr(self.mod, self.name)
        return v if self.key is None else v[self.key]

    def set(self, v):
        if self.key is None:
            setattr(self.mod, self.name, v)
        else:
            getattr(self.mod, self.name)[self.key] = v

    def label(self):
        return self.name if self.key is None else "%s[%r]" % (self.name, self.key)


def knobs(mod):
    """The sizes get_inputs() reads that Model's code does not."""
    reads = _reads(mod, getattr(mod, "get_inputs", None)) - _model_reads(mod)
    out = []
    for name, v in vars(mod).items():
        if name not in reads or name.startswith("__"):
            continue
        if _size(v):
            out.append(Knob(mod, name))
        elif isinstance(v, dict):
            out.extend(Knob(mod, name, k) for k, x in v.items() if _size(x))
    return out


class Variant:
    """Sizes to set together, and how to undo them."""

    def __init__(self, label, changes):
        self.label, self.changes = label, changes  # [(Knob, value)]
        self._old = None

    def __enter__(self):
        self._old = [(k, k.get()) for k, _ in self.changes]
        for k, v in self.changes:
            k.set(v)
        return self

    def __exit__(self, *exc):
        for k, v in reversed(self._old):
            k.set(v)
        return False


def _shapes_entries(mod, ks, notes):
    """Variants from a corpus problem's other SHAPES entries: the selected
    dict takes another entry's values (only its keys; the dtype stays)."""
    shapes = getattr(mod, "SHAPES", None)
    if not isinstance(shapes, dict):
        return []
    out = []
    for name in {k.name for k in ks if k.key is not None}:
        sel = getattr(mod, name)
        if not any(e is sel for e in shapes.values()):
            continue  # a dict of sizes, not the selected SHAPES entry
        for label, entry in shapes.items():
            if entry is sel or not isinstance(entry, dict):
                continue
            changes = [(k, entry[k.key]) for k in ks if k.name == name and _size(entry.get(k.key))]
            if changes and _growth(changes) <= MAX_GROWTH:
                out.append(Variant("SHAPES[%r]" % label, changes))
            elif changes:
                notes.append("SHAPES[%r]: its inputs would grow over %.0fx the shown, not tried" % (label, MAX_GROWTH))
    return out


def _growth(changes):
    """An upper estimate of how much the inputs grow: the product of the ratios."""
    g = 1.0
    for k, v in changes:
        g *= max(1.0, v / k.get())
    return g


def candidates(mod, safe, notes):
    """Variants to try, in order: other SHAPES entries, then one size
    halved, then one (another where there is one) doubled. safe(variant):
    whether it leaves the constructor's arguments alone."""
    ks = [k for k in knobs(mod) if safe(Variant(k.label(), [(k, k.get() * 2)]))]
    out = [v for v in _shapes_entries(mod, ks, notes) if safe(v)]
    if ks:
        a = ks[0]
        if a.get() >= 2:
            out.append(Variant("%s x0.5" % a.label(), [(a, a.get() // 2)]))
        b = ks[1] if len(ks) > 1 else a
        out.append(Variant("%s x2" % b.label(), [(b, b.get() * 2)]))
    return [v for v in out if safe(v)]


def _same_init(before, after):
    if type(before) is not type(after):
        return False
    if isinstance(before, torch.Tensor):
        return before.shape == after.shape and before.dtype == after.dtype and torch.equal(before.cpu(), after.cpu())
    if isinstance(before, (list, tuple)):
        return len(before) == len(after) and all(_same_init(a, b) for a, b in zip(before, after))
    if isinstance(before, dict):
        return before.keys() == after.keys() and all(_same_init(before[k], after[k]) for k in before)
    return before == after


def nbytes(x):
    return sum(t.numel() * t.element_size() for t in tensors_of(x))


def shape_of(x):
    return [list(t.shape) for t in tensors_of(x)]


def finite(out):
    return all(bool(torch.isfinite(t).all()) for t in tensors_of(out) if t.is_floating_point() or t.is_complex())


def plan(mod, init_of):
    """(variants that are safe to try, notes on sizes left out); no
    variant where the module has no size to vary (the caller says so).
    init_of(): get_init_inputs() as the evaluation seeds it."""
    notes = []
    try:
        init0 = init_of()
    except Exception as e:  # noqa: BLE001 - no variant then
        return [], ["get_init_inputs() failed: %s" % type(e).__name__]

    def safe(v):
        with v:
            try:
                same = _same_init(init0, init_of())
            except Exception:  # noqa: BLE001 - a size the constructor arguments cannot take
                same = False
        if not same:
            notes.append("%s: get_init_inputs() changes with it (the candidate's model was built with the shown "
                         "arguments), not varied" % v.label)
        return same
    return candidates(mod, safe, notes)[:MAX_VARIANTS], notes

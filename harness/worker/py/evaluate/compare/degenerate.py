"""Degenerate references: outputs that do not depend on the inputs.

A reference whose every tensor output is bitwise identical across the
correctness trials, although its inputs differed, computes a constant
(KernelBench level 2 at commit c6c4ab6: problem 80 is a max over a kept
dimension minus its own mean, always 0; problem 66 a softmax over a
dimension of size one, always 1). Any candidate returning that constant
"passes" at whatever speed: the problem measures nothing, so the verdict is
reference_error (check degenerate_reference), naming what was constant.
A float output counts as constant too when one value would pass the
comparison's allclose against it in every trial (evaluate.compare.nearconst:
level 2 problem 41 is zero up to rounding, and candidates were judged
against its rounding noise).

Bitwise identity is judged by chunk fingerprints (evaluate.guards.fingerprint:
NaN payloads and -0.0 count), so no copy of an output is kept."""
import torch

from evaluate.common import ReferenceFailure, chunks, tensors_of
from evaluate.compare.compare import tolerance
from evaluate.guards.fingerprint import same
from evaluate.compare.nearconst import Span, constant_within


# Fewest elements of an integer or boolean output judged constant.
MIN_DISCRETE = 16


class DegenerateWatch:
    """Fed each trial's input and reference-output fingerprints; check()
    raises ReferenceFailure when every tensor output stayed the same while
    the inputs changed."""

    def __init__(self, tol=None):
        self.tol = tol  # the problem's tolerance override (None: ours)
        self.first = None  # (inputs fp, [output fp], [summary])
        self.inputs_changed = False
        self.constant = None  # indices of outputs unchanged so far
        self.spans = {}  # float output index -> [Span per trial]
        self.dtypes, self.shapes = {}, {}
        self.trials = 0

    def add(self, fpr, fp_in, ref_out):
        outs = tensors_of(ref_out)
        fps = [(tuple(o.shape), o.dtype, fpr.of([o])) for o in outs]  # a shape that follows the inputs is not constant
        self.trials += 1
        self._add_spans(outs)
        if self.first is None:
            self.first = (fp_in, fps, [_summary(o) for o in outs])
            # A few integers or booleans can repeat by chance across five
            # trials (an argmax of two values): only outputs that cannot
            # are judged.
            self.constant = {i for i, o in enumerate(outs) if o.is_floating_point() or o.is_complex() or o.numel() >= MIN_DISCRETE}
            return
        in0, fps0, _ = self.first
        if not same(in0, fp_in):
            self.inputs_changed = True
        self.constant = {i for i in self.constant if len(fps) == len(fps0) and fps0[i][:2] == fps[i][:2] and same(fps0[i][2], fps[i][2])}

    def _add_spans(self, outs):
        if self.trials == 1:
            self.spans = {i: [] for i, o in enumerate(outs) if o.is_floating_point() or o.is_complex()}
            self.dtypes = {i: outs[i].dtype for i in self.spans}
            self.shapes = {i: tuple(outs[i].shape) for i in self.spans}
        for i in list(self.spans):
            if i >= len(outs) or outs[i].dtype != self.dtypes[i] or tuple(outs[i].shape) != self.shapes[i]:
                del self.spans[i]  # another shape or dtype: not one constant
                continue
            self.spans[i].append(Span(outs[i]))

    def _within_tolerance(self):
        """{output index: the constant} for float outputs one value passes
        allclose against in every trial so far."""
        got = {}
        for i, spans in self.spans.items():
            atol, rtol, rel = tolerance(self.dtypes[i], self.tol)
            ct = constant_within(spans, atol, rtol, rel)
            if ct is not None:
                got[i] = ct
        return got

    def suspect(self):
        """Whether every output looks constant so far: worth running the
        reference alone on the trials a failing candidate cut short."""
        if not self.first or not self.first[1]:
            return False
        return len(self.constant | set(self._within_tolerance())) == len(self.first[1])

    def check(self, ref_path, noise=None):
        """noise(): whether the reference's outputs are rounding noise,
        asked only where a tiny output's constant fails the relative norm."""
        if self.trials < 2 or not self.inputs_changed or not self.first or not self.first[1]:
            return
        if len(self.constant) == len(self.first[1]):
            what = "; ".join("output %d %s" % (i, s) for i, s in enumerate(self.first[2]))
            raise ReferenceFailure("degenerate_reference", (
                "the reference %s is degenerate: its outputs were bitwise identical in all %d correctness trials although its "
                "inputs differed (%s): any candidate returning that constant passes, so the problem measures nothing") % (
                ref_path or "", self.trials, what))
        near = self._within_tolerance()
        if len(self.constant | set(near)) < len(self.first[1]):
            return
        if any(tiny for i, (_c, tiny) in near.items() if i not in self.constant) and not (noise and noise()):
            return
        what = "; ".join("output %d %s%s" % (i, s, ", within tolerance of the constant %.6g" % near[i][0] if i in near and i not in self.constant else "")
                         for i, s in enumerate(self.first[2]))
        raise ReferenceFailure("degenerate_reference", (
            "the reference %s is degenerate: in all %d correctness trials, although its inputs differed, its outputs stayed "
            "within the comparison's tolerance of one constant (%s): a candidate returning that constant passes, and an "
            "honest one is judged against the reference's rounding, so the problem measures nothing") % (
            ref_path or "", self.trials, what))


def _summary(t):
    """A short description of a reference output's values, read in chunks
    (no whole-tensor temporaries on multi-GB outputs)."""
    desc = "%s %s" % (tuple(t.shape), str(t.dtype).replace("torch.", ""))
    if t.numel() == 0:
        return desc + ", empty"
    f = t.detach()
    if f.is_complex():
        f = torch.view_as_real(f)
    lo, hi, total = float("inf"), float("-inf"), 0.0
    for c in chunks(f):
        c = c.double()
        lo, hi = min(lo, float(c.min().item())), max(hi, float(c.max().item()))
        total += float(c.sum().item())
    if lo == hi:
        return desc + ", every element %.6g" % lo
    return desc + ", values in [%.6g, %.6g], mean %.6g" % (lo, hi, total / f.numel())

"""Outputs constant within the comparison's tolerance (evaluate.compare.degenerate).

KernelBench level 2 problem 41 (GEMM, BatchNorm, GELU, GroupNorm, a mean
over the channels, ReLU) is zero for every input up to rounding: each
group of the GroupNorm has mean zero, so their mean is zero too (its norm
was 4.8e-8). Its outputs differ between trials, by rounding alone, so a
test of bitwise identity passes it, and honest candidates were
`incorrect` by the relative norm of that noise. What matters is whether
one constant c would pass the comparison's allclose in every trial:
|c - x| <= atol + rtol * |x| for every element x. The set of such x is an
interval around c, so an output's least and greatest elements decide it:
one chunked pass per trial, no copy kept.

The relative norm is asked of c too, except where the reference's own
RMS is under atol and its outputs are rounding noise: inputs moved by a
rounding-level step move them by more than the relative norm allows
(rounding_noise). A small output that follows its inputs (tanh(x) * 1e-6)
is not noise, and a constant fails it by its relative norm."""
import math

import torch

from evaluate.common import chunks


class Span:
    """One float output's extremes and sums in one trial (read in chunks).
    Each chunk's figures stay on the device until one read of them all:
    a read per figure and chunk (five syncs, and a float64 copy of the
    chunk) cost every correctness trial milliseconds on a GPU."""

    def __init__(self, t):
        f = t.detach()
        if f.is_complex():
            f = torch.view_as_real(f)
        self.n = f.numel()
        self.lo, self.hi, self.s1, self.s2, self.finite = math.inf, -math.inf, 0.0, 0.0, True
        rows = []
        for c in chunks(f):
            lo, hi = torch.aminmax(c)
            rows.append(torch.stack([torch.isfinite(c).all().double(), lo.double(), hi.double(), c.sum(dtype=torch.float64),
                                     torch.linalg.vector_norm(c, dtype=torch.float64) ** 2]))
        for finite, lo, hi, s1, s2 in (torch.stack(rows).tolist() if rows else []):
            if not finite:
                self.finite = False  # NaN or Inf: never "constant within tolerance"
                return
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
            self.s1 += s1
            self.s2 += s2


def near(c, x, atol, rtol):
    return abs(c - x) <= atol + rtol * abs(x)


def constant_within(spans, atol, rtol, rel):
    """(c, tiny): the constant c that passes allclose against every span
    (trials of one output), or None; tiny when c fails the relative norm
    and the output's RMS is under atol (then only rounding_noise makes it
    degenerate). c is the first trial's midpoint."""
    if not spans or not all(s.finite and s.n for s in spans):
        return None
    c, tiny = (spans[0].lo + spans[0].hi) / 2, False
    for s in spans:
        if not (near(c, s.lo, atol, rtol) and near(c, s.hi, atol, rtol)):
            return None
        err2 = max(0.0, s.s2 - 2 * c * s.s1 + s.n * c * c)  # sum (x - c)^2
        if math.sqrt(err2) > rel * math.sqrt(s.s2):
            if math.sqrt(s.s2 / s.n) > atol:
                return None
            tiny = True
    return c, tiny


# A rounding-level relative step for the inputs (a few float32 ulps).
STEP = 2.0 ** -21


def rounding_noise(st, s, tol):
    """Whether the reference's outputs on seed s's inputs move beyond the
    comparison's tolerance when its float inputs move by STEP: outputs made
    of rounding, not of the inputs."""
    from evaluate.common import clone_tree, flatten, tensors_of
    from evaluate.compare.compare import compare
    x = st.make_inputs(s)
    a = flatten(st.ref_forward(clone_tree(x)))
    for t in tensors_of(x):
        if t.is_floating_point():
            t.mul_(1 + STEP)
    b = flatten(st.ref_forward(x))
    return any(isinstance(r, torch.Tensor) and r.is_floating_point() and not compare(i, r, o, tol)[0]
               for i, (r, o) in enumerate(zip(a, b)))

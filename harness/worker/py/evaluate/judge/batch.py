"""The judge's checked calls: calls of the candidate timed from outside,
one request each, each on a fresh input set of the judge's secret seed,
each output written where the judge reads it and compared with the
reference.

Why: the outside batches (Channel.outside) take the candidate's process at
its word that it made k calls on the inputs it holds. Code in that process
is the candidate's to rewrite: it can replay the held input's output, or
make no call at all and answer at once. A checked call cannot be shortened
that way: its inputs are written just before its request while the
candidate's processes are stopped (nothing to compute ahead), every call
has its own values (nothing to replay), and an output slot left unwritten
when the answer comes still holds the judge's fill (a wrong output, so an
incorrect verdict).

Layout: each input tensor position is one tensor of p rows (row i is call
i's), each output tensor position one slot tensor of p rows, shared once
(the candidate's process maps and touches every page then, zeros in the
inputs, so no call pays a first touch). Both sides use these functions:
the judge to stack, load, fill and read; the candidate's process
(evaluate.judge.client) to index and write."""
import torch

from evaluate.common import flatten, tensors_of


class Unbatchable(Exception):
    """The problem's inputs or outputs do not fit the batch's layout."""


def stack(sets):
    """One tree shaped like each set, its tensors stacked along a new first
    dimension (set i at row i); every other leaf equal across sets."""
    first = sets[0]
    if isinstance(first, torch.Tensor):
        if any(not isinstance(s, torch.Tensor) or s.shape != first.shape or s.dtype != first.dtype for s in sets):
            raise Unbatchable("an input tensor changes shape or type between seeds")
        return torch.stack([s.detach() for s in sets])
    if isinstance(first, (list, tuple)):
        if any(not isinstance(s, (list, tuple)) or len(s) != len(first) for s in sets):
            raise Unbatchable("get_inputs() changes its structure between seeds")
        return type(first)(stack([s[j] for s in sets]) for j in range(len(first)))
    if any(s != first for s in sets[1:]):
        raise Unbatchable("a non-tensor input (%s) changes between seeds" % type(first).__name__)
    return first


def same_outputs(refs):
    """Unbatchable unless every reference output has the first's tensor
    shapes and types (an output whose shape follows the input's values,
    as a jagged gather's, has no fixed slot)."""
    sig = [(tuple(t.shape), t.dtype) for t in tensors_of(refs[0])]
    for r in refs[1:]:
        if [(tuple(t.shape), t.dtype) for t in tensors_of(r)] != sig:
            raise Unbatchable("the reference's output shapes change with the input values")


def blank(tree):
    """Zeroes a stacked tree's tensors (shared before their values are)."""
    for t in tensors_of(tree):
        t.zero_()


def load(stacked, i, x):
    """Row i of each stacked tensor gets input set x's tensor."""
    for dst, src in zip(tensors_of(stacked), tensors_of(x)):
        dst[i].copy_(src)


def touch(tree):
    """Maps every page of the tree's tensors into this process (a read of
    each), so no call of the batch pays a first touch."""
    for t in tensors_of(tree):
        if t.numel():
            t.sum()


def row(tree, i):
    """Call i's inputs from a stacked tree."""
    if isinstance(tree, torch.Tensor):
        return tree[i]
    if isinstance(tree, (list, tuple)):
        return type(tree)(row(v, i) for v in tree)
    return tree


def slots(ref_out, p):
    """Output slots for p calls shaped like the reference's tensor outputs,
    filled (fill). Unbatchable without a tensor output."""
    ts = tensors_of(ref_out)
    if not ts:
        raise Unbatchable("the reference returns no tensor")
    if len(ts) != len(flatten(ref_out)):
        raise Unbatchable("the reference returns values other than tensors")
    out = [torch.empty((p,) + tuple(t.shape), dtype=t.dtype, device=t.device) for t in ts]
    fill(out)
    return out


def fill(slot_list, i=None):
    """What no correct output holds, in row i (every row when None): NaN
    where the type has it, else the type's least value (the judge's
    compare then fails an unwritten slot)."""
    for s in slot_list:
        r = s if i is None else s[i]
        if s.dtype.is_floating_point or s.dtype.is_complex:
            r.fill_(float("nan"))
        elif s.dtype == torch.bool:
            r.fill_(False)
        else:
            r.fill_(torch.iinfo(s.dtype).min)


def write(slot_list, i, out):
    """The candidate's process: call i's outputs into row i of the slots."""
    ts = tensors_of(out)
    if len(ts) != len(slot_list):
        raise ValueError("the candidate returned %d tensors, the judge's slots hold %d" % (len(ts), len(slot_list)))
    for j, (s, t) in enumerate(zip(slot_list, ts)):
        if tuple(t.shape) != tuple(s.shape[1:]):
            raise ValueError("output %d has shape %s, the judge's slot %s" % (j, tuple(t.shape), tuple(s.shape[1:])))
        s[i].copy_(t)


def read(slot_list, i):
    """A copy of call i's outputs as the slots hold them now."""
    return [s[i].clone() for s in slot_list]

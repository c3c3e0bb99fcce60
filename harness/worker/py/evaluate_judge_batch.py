"""The judge's checked batch: P calls of the candidate, timed from outside,
every one of them on a fresh input set of the judge's secret seed, every
output written where the judge reads it and compared with the reference.

Why: the outside batches (Channel.outside) take the candidate's process at
its word that it made k calls on the inputs it holds. Code in that process
is the candidate's to rewrite: it can replay the held input's output, or
make no call at all and answer at once. A checked batch cannot be
shortened that way: its inputs arrive with the timed request (nothing to
compute ahead), each call has its own set (nothing to replay), and an
output slot left unwritten when the answer comes still holds the judge's
fill (a wrong output, so an incorrect verdict).

Layout on the wire: each input tensor position is one tensor of P rows
(row i is call i's), each output tensor position one slot tensor of P rows,
staged once; the judge refills the slots and sends new inputs per repeat.
Both sides use these functions: the judge to stack, fill and read; the
candidate's process (evaluate_judge_client) to index and write."""
import torch

from evaluate_common import flatten, tensors_of


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


def fill(slot_list):
    """What no correct output holds: NaN where the type has it, else the
    type's least value (the judge's compare then fails an unwritten slot)."""
    for s in slot_list:
        if s.dtype.is_floating_point or s.dtype.is_complex:
            s.fill_(float("nan"))
        elif s.dtype == torch.bool:
            s.fill_(False)
        else:
            s.fill_(torch.iinfo(s.dtype).min)


def write(slot_list, i, out):
    """The candidate's process: call i's outputs into row i of the slots."""
    ts = tensors_of(out)
    if len(ts) != len(slot_list):
        raise ValueError("the candidate returned %d tensors, the judge's slots hold %d" % (len(ts), len(slot_list)))
    for j, (s, t) in enumerate(zip(slot_list, ts)):
        if tuple(t.shape) != tuple(s.shape[1:]):
            raise ValueError("output %d has shape %s, the judge's slot %s" % (j, tuple(t.shape), tuple(s.shape[1:])))
        s[i].copy_(t)


def read(snapshot, i):
    """Call i's outputs from a snapshot of the slots."""
    return [s[i] for s in snapshot]

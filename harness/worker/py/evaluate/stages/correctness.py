"""The correctness stage: trials on fresh inputs, recording both op traces.

Memory per trial, as KernelBench: the inputs, the reference's output and
the candidate's (plus the allocator poison, released after this stage).
Both run on the same input tensors; chunk fingerprints taken before and
after each call show whether either wrote its inputs, and stand in for
the earlier trials' outputs. The checks of a trial (output_type,
input_mutation, output_aliasing, the comparisons, memoization across
trials) are decided inside its loop; the registry declares them
(checks/)."""
import math

import torch

from evaluate.common import KernelFailure, ReferenceFailure, clone_tree, flatten, nbytes, overlaps, release, tensors_of
from evaluate.compare.compare import compare_outputs, poison_allocator
from evaluate.compare.degenerate import DegenerateWatch
from evaluate.compare.nearconst import rounding_noise
from evaluate.guards.fingerprint import differing_chunks, same
from evaluate.guards.ops import OpRecorder, OpTrace, heavy_aten, same_trace

try:  # imported in the warm parent (0.1 s, no CUDA), so count_work costs no import
    from evaluate import workcount
except Exception:  # noqa: BLE001 - counting is optional; _count_work reports it
    workcount = None


def correctness(st):
    trials = st.job.trials
    prev = []  # fingerprints of (ref outputs, cand outputs) of earlier trials
    degen = DegenerateWatch(st.trial_judge.tol)
    st.launches0 = st.counter.n  # kernels launched by the forward calls count as the candidate's own, not its constructor's
    st.ctx.progress("correctness", 0, trials)
    failed_at = None
    for trial in range(trials):
        if st.remaining() < 1:
            raise KernelFailure("timeout", "correctness", "time budget exhausted during correctness trials")
        if not _trial(st, trial, prev, degen):
            failed_at = trial
            break
        st.ctx.progress("correctness", trial + 1, trials)
    st.res["trials"] = trials
    if failed_at is not None and degen.suspect():
        _reference_alone(st, failed_at + 1, degen)
    degen.check(st.ref_path, lambda: rounding_noise(st, st.job.seed + 1000003, st.trial_judge.tol))
    if failed_at is not None and _draws_random(st):
        _reference_repeats(st, failed_at)
    del prev, degen
    release(st.device)  # the poison goes before the next stage where memory is short


def _reference_alone(st, first, degen):
    """The reference on the trials a wrong answer cut short, where its
    outputs so far look constant: whether it is degenerate decides whose
    failure this is (a reference zero up to rounding fails every honest
    candidate by the relative norm of that rounding)."""
    for trial in range(first, st.job.trials):
        if st.remaining() < 1:
            return
        inputs = st.make_inputs(st.job.seed + 1000003 * (trial + 1))
        fp_in = st.fpr.of(tensors_of(inputs))
        out = st.ref_forward(inputs)
        degen.add(st.fpr, fp_in, out)
        del inputs, out


# Names of the torch functions and aten ops that draw random numbers.
RANDOM_OPS = ("dropout", "bernoulli", "rand", "normal", "uniform", "multinomial", "poisson", "exponential_", "geometric_", "cauchy_")


def _draws_random(st):
    """Whether the reference's recorded ops draw random numbers: only then
    is a wrong answer asked whether it is the reference's. A deterministic
    reference's is the candidate's, even where the candidate left a hook
    behind that would make the reference's next calls differ."""
    names = list(st.ref_ops_all) + [str(o) for o in (getattr(st, "ref_trace", None) or ())]
    return any(r in n.lower() for n in names for r in RANDOM_OPS)


def _reference_repeats(st, trial):
    """A wrong answer is the candidate's only where the reference agrees
    with itself: called twice in a row on the failed trial's inputs (no
    seeding between), a reference that draws random numbers (a Dropout in
    training mode, as built) or is otherwise nondeterministic differs
    beyond the tolerance, and no candidate, the reference's own code
    included, can match it. Only on a wrong answer: a pass costs nothing."""
    if st.remaining() < 1:
        return
    inputs = st.make_inputs(st.job.seed + 1000003 * (trial + 1))
    first = flatten(st.ref_forward(clone_tree(inputs)))
    second = flatten(st.ref_forward(clone_tree(inputs)))
    ok, name, detail = compare_outputs(first, second, st.trial_judge.tol)
    if not ok:
        raise ReferenceFailure("nondeterministic_reference", (
            "the reference %s gives other outputs when called twice on the same inputs (%s: %s): it draws random numbers "
            "(a Dropout in training mode, as constructed) or is otherwise nondeterministic, so no candidate can match it; "
            "the problem measures nothing until its forward is deterministic (eval mode, p=0, or a fixed generator)") % (
            st.ref_path or "", name, detail[:300]))


def _trial(st, trial, prev, degen):
    """One trial; False when its answer was wrong (the trials end)."""
    s_in = st.job.seed + 1000003 * (trial + 1)
    inputs, fp_in, ref_out, trace = _reference_side(st, trial, s_in)
    degen.add(st.fpr, fp_in, ref_out)
    if trial == 0:
        _poison(st, ref_out)
    out = _candidate_side(st, trial, inputs, trace)
    del trace
    outs, refs = flatten(out), flatten(ref_out)
    _output_types(st, outs, refs)
    if not st.ref_mutates:
        bad = sorted({i for i, _k in differing_chunks(fp_in, st.fpr.of(tensors_of(inputs)))})
        st.checks.add("input_mutation", not bad, "candidate modified input(s) %s in place" % bad if bad else "", "integrity_violation")
    if not st.ref_aliases:
        al = [(j, i) for j, o in enumerate(tensors_of(out)) for i, t in enumerate(tensors_of(inputs)) if overlaps(o, t)]
        st.checks.add("output_aliasing", not al, "output/input pairs sharing memory: %s" % al if al else "", "integrity_violation")
    trial_ok = _values(st, trial, outs, refs)
    fp_pair = (st.fpr.of(tensors_of(ref_out)), st.fpr.of(tensors_of(out)))
    if not trial_ok:
        _cached_across_trials(st, trial, prev, fp_pair)
        return False
    prev.append(fp_pair)
    return True


def _reference_side(st, trial, s_in):
    """The trial's inputs and the reference's output, its ops recorded."""
    inputs = st.make_inputs(s_in)
    fp_in = st.fpr.of(tensors_of(inputs))
    rec, trace = OpRecorder(), OpTrace()
    if trial == 0 and st.job.count_work:
        ref_out = _count_work(st, inputs, rec, trace)
    else:
        ref_out = st.ref_forward(inputs, rec, trace)
    for k, v in rec.ops.items():
        st.ref_ops_all[k] = st.ref_ops_all.get(k, 0) + v
    if any(overlaps(o, i) for o in tensors_of(ref_out) for i in tensors_of(inputs)):
        st.ref_aliases = True
    if not same(fp_in, st.fpr.of(tensors_of(inputs))):
        # The reference writes its inputs: the candidate gets the same
        # values again, from the same seed.
        st.ref_mutates = True
        del inputs
        inputs = st.make_inputs(s_in)
        if not same(fp_in, st.fpr.of(tensors_of(inputs))):
            # get_inputs() does not reproduce its values from the seed:
            # the reference runs again on a copy of these.
            del ref_out
            ref_in = clone_tree(inputs)
            ref_out = st.ref_forward(ref_in)
            del ref_in
            fp_in = st.fpr.of(tensors_of(inputs))
    return inputs, fp_in, ref_out, trace


def _poison(st, ref_out):
    """Poisoned now that the inputs and the reference's outputs exist,
    leaving room for the candidate's outputs and as much again in
    temporaries."""
    st.out_bytes = nbytes(ref_out)
    st.ctx.progress("poison")
    poisoned, detail = poison_allocator(st.device, keep_free=2 * st.out_bytes + (1 << 30), out_bytes=st.out_bytes)
    st.ctx.progress("correctness", 0, st.job.trials)
    st.checks.add("poisoned_allocator", True, detail)
    if st.device.type == "cuda" and not poisoned:
        st.warnings.append("allocator poison skipped: " + detail)


def _candidate_side(st, trial, inputs, trace):
    """The candidate's output on the same inputs, its ops recorded."""
    crec, ctrace = OpRecorder(), OpTrace()
    out = st.run_candidate(inputs, trial, crec, ctrace)
    for k, v in crec.ops.items():
        st.cand_ops_all[k] = st.cand_ops_all.get(k, 0) + v
    # Any trial whose dispatched ops are the reference's is enough.
    st.same_as_ref = st.same_as_ref or same_trace(trace.ops, ctrace.ops)
    if trial == 0:
        st.ref_trace = trace.ops  # for the calls traced once timed
    st.ref_aten |= heavy_aten(trace.ops)
    st.cand_aten |= heavy_aten(ctrace.ops)
    return out


def _output_types(st, outs, refs):
    """Output types: a subclass or a lazy object could fake its values."""
    for o in outs:
        if isinstance(o, torch.Tensor) and type(o) not in (torch.Tensor, torch.nn.Parameter):
            st.checks.add("output_type", False, "output is a %s, a tensor subclass; return a plain torch.Tensor" % type(o).__name__,
                          "integrity_violation")
            raise KernelFailure("integrity_violation", "correctness", "")
    if len(outs) != len(refs):
        st.checks.add("output_type", False, "candidate returned %d outputs, the reference %d" % (len(outs), len(refs)), "incorrect")
        raise KernelFailure("incorrect", "correctness", "")
    for i, (o, r) in enumerate(zip(outs, refs)):
        if isinstance(r, torch.Tensor) and not isinstance(o, torch.Tensor):
            st.checks.add("output_type", False, "output %d is a %s, expected a torch.Tensor" % (i, type(o).__name__), "integrity_violation")
            raise KernelFailure("integrity_violation", "correctness", "")
    st.checks.add("output_type", True, "")


def _values(st, trial, outs, refs):
    """The comparisons of one trial's outputs (evaluate.compare.compare through the
    trial judge); True when all passed."""
    trial_ok = True
    for i, (o, r) in enumerate(zip(outs, refs)):
        if isinstance(r, torch.Tensor):
            ok, name, detail = st.trial_judge.compare(i, r, o, st.res["notes"])
            st.checks.add(name, ok, ("trial %d: " % trial) + detail, "incorrect")
            if ok and name == "allclose":
                st.checks.add("relative_norm", True, "")
            trial_ok = trial_ok and ok
        else:
            ok = (o == r) if not isinstance(r, float) else math.isclose(o, r, rel_tol=1e-4, abs_tol=1e-6)
            st.checks.add("allclose", bool(ok), "trial %d: output %d = %r, expected %r" % (trial, i, o, r), "incorrect")
            trial_ok = trial_ok and bool(ok)
    return trial_ok


def _cached_across_trials(st, trial, prev, fp_pair):
    """A wrong answer that equals an earlier trial's answer on new inputs
    is a cached output, not a numerical error."""
    for (pr, po) in prev:
        if same(po, fp_pair[1]) and not same(pr, fp_pair[0]):
            st.checks.add("memoization", False, "trial %d returned trial-earlier outputs for new inputs (cached across calls)" % trial,
                          "integrity_violation")
            return


def _count_work(st, ref_in, rec, trace):
    """Runs the reference's first forward under the work counter as well
    (count_work): FLOPs and bytes of the real inputs, at no extra run."""
    try:
        if workcount is None:
            raise ImportError("workcount.py did not import")
        c = workcount.Counter()
        modes = (rec, workcount.Attention(c), c, trace)
    except Exception as e:  # noqa: BLE001
        st.warnings.append("work counting unavailable: %s" % e)
        return st.ref_forward(ref_in, rec, trace)
    out = st.ref_forward(ref_in, *modes)
    try:
        w = workcount.summarize(c, ref_in, st.ref_model, out, st.device)
        st.res["work"] = {"flops": w["flops"], "bytes": w["bytes"], "dtype": w["dtype"], "method": "traced",
                          "ops": [o for o in w["ops"] if o["flops"]][:20], "bytes_detail": w["bytes_detail"]}
    except Exception as e:  # noqa: BLE001
        st.warnings.append("work counting failed: %s" % e)
    return out

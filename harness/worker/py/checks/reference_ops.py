"""The reference_ops rule (evaluate.guards.refops): the candidate's work must not
be the reference's own ops. Run over the correctness trials' traces by its
stage; once_timed applies it to the calls traced during and after timing."""
from evaluate.guards import refops
from evaluate.guards.ops import heavy_aten, same_trace

NAME = "reference_ops"
STAGE = "reference_ops"
VERDICT = "integrity_violation"
DESCRIPTION = "The candidate is not the reference: it does not dispatch every compute op of the reference's trace in order, nor (without kernels of its own, or with kernel_policy strict) call the reference's heavy ops; library calls beside its own kernels pass with a note of their share."


def run(st):
    why, names = refops.used(st.mains, st.ref_aten, st.cand_ops_all, st.cand_aten)
    share = lambda: refops.library_share(  # noqa: E731 - measured only when the note needs it
        lambda timer: st.run_candidate(st.make_inputs(st.job.seed + 7), -4, timer), st.device, st.ref_aten)
    return refops.decide(st.res["notes"], st.policy, st.same_as_ref, why, names, st.own, st.mains, share)


def once_timed(st, where, ops, trace_ops):
    """The rule on a call made once timed: a candidate may compute its own
    way through the correctness trials and switch to the reference's ops
    afterwards. Records a failure only."""
    why = same_trace(st.ref_trace, trace_ops)
    if not why:
        why = refops.used(st.mains, st.ref_aten, ops, heavy_aten(trace_ops))[0]
        why = why if refops.violates(st.policy, st.own, why) else ""
    if why:
        st.checks.add(NAME, False, "%s: %s, which the correctness trials did not show; implement them in a kernel" % (where, why), VERDICT)

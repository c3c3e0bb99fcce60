"""The stages after timing: after_timing (the reference_ops rule on the
calls traced while timed, and the audit call on fresh inputs),
after_timing_guards (what the reference runs on and the harness's own
functions, once more) and sol (its registered checks: faster_than_sol).
torch.compile of the reference is timed by a job of its own, never in the
candidate's process (evaluate.baseline)."""
from evaluate.common import guard_changed, release
from evaluate.guards.integrity import post_timing_call
from evaluate.guards import stateful
from evaluate.guards.ops import OpRecorder, OpTrace

from evaluate.pipeline import STOP
import checks.reference_ops as reference_ops


def after_timing(st):
    for where, ops, trace_ops in st.traced:
        if not st.checks.failed():
            reference_ops.once_timed(st, "once timed (" + where + ", untimed)", ops, trace_ops)
    if st.checks.failed():
        return
    st.ctx.progress("after_timing")
    if st.stateful:
        st.checks.add("audit", *stateful.recheck(st), "integrity_violation")
        release(st.device)
        return
    post_rec, post_trace = OpRecorder(), OpTrace()
    ok, detail = post_timing_call(lambda x: st.run_candidate(x, -3, post_rec, post_trace), st.ref_call, st.make_inputs,
                                  st.job.seed + 4242, st.tol, st.fpr, st.ref_mutates)
    if ok:
        detail = ("%d timed iterations audited at random (%s) and %d traced calls among them, all matched the reference; "
                  "%s (audit seed %d)") % (len(st.audited), st.audited[:20], len(st.traced), detail, st.audit_seed)
    st.checks.add("audit", ok, detail, "integrity_violation")
    if ok:
        reference_ops.once_timed(st, "after timing (a call on fresh inputs, traced)", post_rec.ops, post_trace.ops)
    del post_rec, post_trace
    release(st.device)


def after_timing_guards(st):
    if not st.checks.failed():
        st.tamper.check("after timing")
    changed = guard_changed(st.guard)
    if changed:
        st.checks.add("harness_patched", False, "during timing the candidate replaced functions the checks use: %s" % changed[:10],
                      "integrity_violation")
        return STOP

"""The stages after timing: after_timing (the reference_ops rule on the
calls traced while timed, and the audit call on fresh inputs),
after_timing_guards (what the reference runs on and the harness's own
functions, once more), sol (its registered checks: faster_than_sol) and
timing_compile (torch.compile of the reference, timed; never a verdict)."""
import torch

from evaluate.common import guard_changed, is_oom, release
from evaluate.guards.integrity import post_timing_call
from evaluate.guards import stateful
from evaluate.guards.ops import OpRecorder, OpTrace
from evaluate.timing import time_limit

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


def timing_compile(st):
    job, device = st.job, st.device
    want = job.wants_compile(device)
    if want and st.remaining() > job.compile_cap_for(device) + 10:
        st.ctx.progress("timing_compile")
        _time_compiled(st)
    elif want:
        st.warnings.append("skipped torch.compile timing of the reference: not enough time left in the budget")


def _time_compiled(st):
    rin = st.make_inputs(st.job.seed + 99)
    try:
        stepped_aside = _step_aside(st)
        try:
            # torch.compile's first use in a process imports TorchDynamo and
            # Inductor: 2-4 s of CPU that held the device in each fresh
            # child (held:timing_compile 3.1 s of a 4.4 s device phase,
            # KernelBench-leaderboard set, H200) until it moved past the step aside.
            cmodel = torch.compile(st.ref_model)
            with time_limit(st.job.compile_cap_for(st.device)), _one_compile_thread():
                with torch.no_grad():
                    cmodel(*rin)
                st.sync()
        finally:
            if stepped_aside:
                st.ctx.progress("wait_device")
                st.ctx.gate()
                st.ctx.progress("timing_compile")

        def comp_fn():
            with torch.no_grad():
                return cmodel(*rin)
        st.res["ref_compile"] = st.timer.bench(comp_fn, st.cap)
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            st.warnings.append("torch.compile of the reference ran out of memory; no compiled timing")
        else:
            st.warnings.append("torch.compile of the reference failed or timed out: %s" % str(e).splitlines()[0][:300] if str(e) else type(e).__name__)


def _one_compile_thread():
    """Inductor compiles in this process: by default it starts a pool of
    compile workers as large as the host's cores, a pool per evaluation
    while a sweep runs one evaluation per core beside the builds, for a
    reference of a few kernels."""
    import torch._inductor.config as inductor_config
    return inductor_config.patch(compile_threads=1)


def _step_aside(st):
    """Hands the device to the next evaluation while torch.compile builds
    the reference on the host (15-20 s of CPU on the H100 box, in which a
    kernelbench run's other evaluations would wait for the device); the
    timing takes it back. The compile's first call (and Triton's autotuning
    of its kernels) then runs beside another evaluation's device phase:
    a forward pass and a few benchmark launches, against timings that are
    medians over many calls. Only where nothing of the candidate's may
    still launch work: no thread it started is alive, and its queued work
    is done."""
    if st.device.type != "cuda" or not st.may_hand_back_device():
        return False
    torch.cuda.synchronize(st.device)
    st.ctx.ungate()
    return True

"""The timing stages: timing (candidate, then the eager reference, with
refreshed inputs and audits) and stream_check (work outside the measured
stream, CUDA only). Their checks (audit, run_candidate, threads,
device_state, stream_work) are decided inside the timed loops; the
registry declares them (checks/)."""
import torch

from evaluate.common import KernelFailure, ReferenceFailure, fmt_exc, free_device_bytes, is_oom, nbytes, release
from evaluate.guards.integrity import Auditor, InputRefresher, private_rng, stream_work_check
from evaluate.timing import AuditFailed, Timer, stats
from evaluate.guards import devstate

from evaluate.pipeline import STOP


class _Timed:
    """What the timing loop and the stream check share: one set of timed
    inputs for both programs (the reference is timed after the candidate,
    on refreshed values; KernelBench holds one set too), its refresher
    and the auditor."""

    def __init__(self, st):
        self.cin = list(st.make_inputs(st.job.seed + 99))  # a list: the refresher may replace its items
        self.rng, st.audit_seed = private_rng(st.job.audit_seed, 1)
        self.refresher = InputRefresher(lambda s: st.make_inputs(s, checked=False), self.cin, self.rng)
        self._limit_refresh(st)
        # A stateful reference cannot be compared with a timed call of the
        # candidate's: the in-step re-check after timing stands in (evaluate.guards.stateful).
        self.auditor = None if st.stateful else Auditor(self.rng, lambda x: _ref_nosync(st, x), self.cin, st.tol, st.fpr)
        self.st = st

    def _limit_refresh(self, st):
        free = free_device_bytes(st.device)
        if free is None:
            return
        # Refreshing holds a second copy of the inputs through each call,
        # beside the output and, in an audit, the reference's output, a copy
        # of the output (up to 256 MiB) and the comparison's temporaries.
        in_bytes = nbytes(self.cin)
        if in_bytes + 3 * st.out_bytes + st.scratch_bytes() > free:
            self.refresher.note = ("inputs of %.1f GiB are too large to refresh before each timed call with %.1f GiB free: "
                                   "timed inputs keep their values; audits still compare against the reference" % (in_bytes / 2**30, free / 2**30))

    def cand_fn(self):
        with torch.no_grad():
            return self.st.cand_model(*self.cin)

    def ref_fn(self):
        with torch.no_grad():
            return self.st.ref_model(*self.cin)


def _ref_nosync(st, x):
    """Audits run the reference without a synchronize: a sync at audited
    iterations only would be a pattern the candidate could observe."""
    st.tamper.check("before an audit's call of the reference")
    with torch.no_grad():
        out = st.ref_model(*x)
    st.tamper.settle()
    return out


def timing(st):
    if st.job.skip_timing:
        return STOP
    st.ctx.progress("timing")
    device = st.device
    if device.type != "cuda":
        st.ctx.gate()
    st.timer = Timer(device, st.job.flush_for(device), st.spin)
    if st.timer.spin is not None and st.timer.spin.kernel is None:
        st.warnings.append("timing used the " + st.timer.spin.note)
    st.cap = st.job.cap_for(device)
    t = st.timed = _Timed(st)
    _time_candidate(st, t)
    st.tamper.check("before the reference's timing")
    if not devstate.check(device, st.checks, "before the reference's timing,"):
        raise KernelFailure("integrity_violation", "timing", "")
    _no_threads_around_ref_timing(st, "before")
    if not st.judge_times_reference:
        st.side.now = "reference"
        st.res["ref_eager"] = st.timer.bench(t.ref_fn, st.cap, report=_reporter(st, "ref_eager"))
        st.side.now = "harness"
    st.tamper.settle()
    _no_threads_around_ref_timing(st, "after")
    st.res["timed_inputs_refreshed"] = t.refresher.n
    for note in (t.refresher.note, t.refresher.swapped):
        if note:
            st.warnings.append(note)


def _time_candidate(st, t):
    st.side.now = "candidate"
    try:
        st.res["candidate"] = st.timer.bench(t.cand_fn, st.cap, refresh=t.refresher, auditor=t.auditor,
                                             report=_reporter(st, "candidate"))
    except AuditFailed as e:
        st.checks.add("audit", False, "%s (audit seed %d)" % (e, st.audit_seed), "integrity_violation")
        raise KernelFailure("integrity_violation", "timing", "")
    except (ReferenceFailure, KernelFailure):
        raise
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        st.checks.add("run_candidate", False, "during timing: " + fmt_exc(e), "runtime_error")
        raise KernelFailure("runtime_error", "timing", "")


def _reporter(st, side):
    """The timing's figures so far as progress events (done: iterations
    timed): what the answer says of a timing its deadline ended."""
    def report(times):
        s = stats(times)
        st.ctx.progress("timing", len(times), 0, {side: {k: s[k] for k in ("median_s", "p10_s", "p90_s", "cv", "cv_raw", "iters")}})
    return report


def _no_threads_around_ref_timing(st, when):
    """A thread of the candidate's running through the reference's timing
    could slow it (the CPU, Python's lock): none may be alive around it."""
    left = st.new_threads()
    if left:
        st.checks.add("threads", False, "%s the reference's timing, the candidate's threads were running: %s" % (when, left),
                      "integrity_violation")
        raise KernelFailure("integrity_violation", "timing", "")


def stream_check(st):
    """Work outside the measured stream (evaluate.guards.integrity); then the
    timed inputs go, before the call on fresh ones."""
    t = st.timed
    if st.device.type == "cuda" and not st.stateful:  # stateful: lone calls (evaluate.guards.stateful)
        st.ctx.progress("stream_check")
        st.side.now = "candidate"
        try:
            ok, detail, kind = stream_work_check(t.cand_fn, t.ref_fn, t.refresher, st.ref_call, st.tol, st.device, st.fpr, rng=t.rng)
        except (ReferenceFailure, KernelFailure):
            raise
        except BaseException as e:  # noqa: BLE001
            if is_oom(e):
                raise
            ok, detail, kind = False, "during the stream check calls: " + fmt_exc(e), "run_candidate"
        st.side.now = "harness"
        if st.timer.spin is not None:
            detail += "; timed with a " + st.timer.spin.note
        st.checks.add(kind, ok, detail, "runtime_error" if kind == "run_candidate" else "integrity_violation")
    if t.auditor is not None:
        st.audited, st.traced = t.auditor.audited, t.auditor.traced
    st.timed = t = None
    release(st.device)

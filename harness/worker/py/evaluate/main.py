"""One evaluation of a candidate (ModelNew) against a KernelBench-format
reference (Model, get_inputs, get_init_inputs), run in a forked child.

main(args, ctx) returns a dict (decoded by harness/convert.go, pyResult):
verdict, stage, checks, timing stats, warnings, memory, and work when
the job's count_work. Every kernel failure becomes a verdict; a failing
reference is verdict reference_error; an out-of-memory error anywhere is
runtime_error with check out_of_memory; only an unusable request becomes
{"harness_error": ...}.

The evaluation is the list STAGES below, run in order by
evaluate.pipeline over one shared state (evaluate.state.EvalState, built
from the typed request evaluate.job.Job). The stages live in
evaluate/stages/ (load, warmup, correctness, integrity, timing, after); each runs the
checks registered for it (the checks package: one module per check,
which the Go side reads too). This file runs them, then finishes: the
verdict, the judge's verify stage (evaluate.judge.client), handing the
device back and whether the child may serve another job.
"""
import os
import time

import torch

from evaluate.common import Check, HarnessError, KernelFailure, ReferenceFailure, dump_profile, is_oom, profiler, release
from evaluate.job import Job
from evaluate.pipeline import Stage, run_stages
from evaluate.state import EvalState
from evaluate.guards.taint import reusable
from evaluate.timing import runqueue_wait_s
from evaluate.guards import devstate
from evaluate.judge import client as judge_client
from evaluate.stages import after
from evaluate.stages import correctness
from evaluate.stages import integrity
from evaluate.stages import load
from evaluate.guards import stateful
from evaluate.stages import timing
from evaluate.stages import warmup

VERDICT_ORDER = ("integrity_violation", "compile_error", "runtime_error", "incorrect")
SANDBOX_SELF = True  # main() forks the judge (evaluate.judge.judge), then enters the sandbox itself

# The evaluation, in order. Progress event names (load_reference,
# load_candidate, init, correctness, integrity, timing, stream_check,
# after_timing, then verify) are the stages' own and are
# read by Go (the stage of a timeout, stage_s); stage names here name the
# checks' STAGE in the registry.
STAGES = (
    Stage("setup", load.setup),
    Stage("load_reference", load.load_reference),
    Stage("prepare", load.prepare),
    Stage("load_candidate", load.load_candidate),
    Stage("construct", load.construct),
    Stage("state", stateful.detect_stage),
    Stage("warm_up", warmup.warm_up),
    Stage("device_phase", warmup.device_phase),
    Stage("correctness", correctness.correctness, stop_if_failed=True),
    Stage("reference_ops", integrity.reference_ops),
    Stage("integrity", integrity.integrity, stop_if_failed=True),
    Stage("memoization"),
    Stage("integrity_recheck", integrity.integrity_recheck, stop_if_failed=True),
    Stage("timing", timing.timing),
    Stage("stream_check", timing.stream_check),
    Stage("after_timing", after.after_timing),
    Stage("after_timing_guards", after.after_timing_guards),
    Stage("sol", stop_if_failed=True),
)


def main(args, ctx):
    t_begin, w_begin = time.monotonic(), runqueue_wait_s()
    # Before any candidate code and before CUDA; the client reads the
    # request's "judge" key itself.
    judge = judge_client.start(ctx, args)
    # CPU tensors cross to and from the judge as POSIX shared memory (and
    # torch's CUDA IPC, where CUDA memory crosses by it, keeps its reference
    # counts there): /dev/shm stays writable.
    ctx.enter_sandbox(extra_write=[d for d in ("/dev/shm",) if os.path.isdir(d)])
    job = Job.parse(args)

    def remaining():
        # The time this process waited for a CPU is the host's load, not the
        # candidate's: Go's deadline grants it too (worker/load.go), up to a tenth of the budget.
        return job.budget_s - (time.monotonic() - t_begin) + min(runqueue_wait_s() - w_begin, 0.1 * job.budget_s)

    res = {"checks": None, "warnings": [], "notes": [], "target": job.target, "stage_s": {}}
    st = EvalState(job, ctx, Check(), res, remaining)
    # The judge times the reference in its own process (the speedup's
    # denominator, out of the candidate's reach); this process does only
    # where there is no judge.
    st.judge_times_reference = judge.sock is not None
    clock = ctx.progress = StageClock(ctx.progress, st)
    st.prof = profiler()
    try:
        _run(st, clock)
    except HarnessError as e:
        return {"harness_error": str(e)}
    st.end_stages()
    clock.close()
    sealed = _finish(st, judge)
    _hand_back_device(ctx, st, res["verdict"])
    _keep_or_not(ctx, st, judge)
    # The result as sealed before the verify stage, and what the harness
    # learned after it (the Go side takes nothing else from after).
    return {"sealed": sealed.decode(), "after": {"process": res.get("process"), "verify_s": res["stage_s"].get("verify")}}


def _run(st, clock):
    """The stages; a failure that ends them becomes the result's verdict."""
    res, checks = st.res, st.checks
    try:
        if st.prof is not None:
            st.prof.runcall(run_stages, st, STAGES)
        else:
            run_stages(st, STAGES)
    except ReferenceFailure as e:
        res["verdict"] = "reference_error"
        res["stage"] = e.stage
        res["error"] = e.message
        checks.add(e.stage, False, e.message + ("\n" + e.trace if e.trace else ""), "reference_error")
    except KernelFailure as e:
        res["verdict"] = e.verdict
        res["stage"] = e.stage
        if e.detail:
            res["error"] = e.detail
    except HarnessError:
        raise
    except BaseException as e:  # noqa: BLE001 - out of memory anywhere in the child
        if not is_oom(e):
            raise
        _out_of_memory(e, st, checks, res, clock.last)
    finally:
        dump_profile(st.prof, "eval")


def _finish(st, judge):
    """The verdict from the checks, the result sealed, then the judge's
    verify stage; returns the sealed result."""
    res, checks = st.res, st.checks
    if st.trial_judge is not None:
        st.trial_judge.finish(res, checks, _verdict_of)
    res["notes"] = list(dict.fromkeys(res["notes"]))
    res["checks"] = checks.export()
    side = st.side
    res["memory"] = side.memory() if side is not None else {"reference_peak_bytes": None, "candidate_peak_bytes": None}
    if "verdict" not in res:
        v = _verdict_of(checks)
        res["verdict"] = v
        v = None if v == "pass" else v
        if v and "stage" not in res:
            res["stage"] = "integrity" if v == "integrity_violation" else "correctness"
    res["correct"] = res["verdict"] == "pass"
    # The client drops the model from this hand-off once it served the
    # judge, and then frees the device memory it held: no other reference
    # to it may stay behind.
    handoff = {"device": st.device, "cand_model": st.cand_model, "construct_on_host": st.constructed_on_host,
               "rebuild": st.rebuild if st.stateful else None}
    st.cand_model = None
    # Sealed before the candidate's code runs in the judge's stages: what
    # it does from here on cannot change what the result reports.
    sealed, digest = judge_client.seal(res)
    judge_client.verify(judge, res, handoff, st.ctx.progress, st.remaining(), digest)
    return sealed


def _keep_or_not(ctx, st, judge):
    """Whether this child may serve another job (evaluate.guards.taint, the
    device's state, the judge)."""
    if st.taint is None:
        return
    res = st.res
    ok, why = devstate.keep(st.device, *judge_client.keep(judge, *reusable(st.taint, res["verdict"])))
    if ok and st.device is not None:
        # An idle child holds no cached device memory another
        # evaluation on its device could need.
        release(st.device, force=True)
    ctx.reusable = ok
    res["process"] = {"job": getattr(ctx, "job_index", 1), "kept": ok, "why": why}


class StageClock:
    """The job's progress events, timed: stage_s adds up the seconds from
    each progress stage's event to the next stage's, and the status board
    (Side) knows the stage."""

    def __init__(self, progress, st):
        self.progress, self.st = progress, st
        self.stage_s = st.res["stage_s"]
        self.last, self.since = None, time.monotonic()

    def __call__(self, stage, done=0, total=0, figures=None):
        if self.st.side is not None:
            self.st.side.enter_stage(stage)
        now = time.monotonic()
        if self.last is not None and self.last != stage:
            self.stage_s[self.last] = round(self.stage_s.get(self.last, 0) + now - self.since, 4)
            self.since = now
        elif self.last is None:
            self.since = now
        self.last = stage
        if figures:
            self.progress(stage, done, total, figures)
        else:  # a progress of three arguments (the tests') still serves
            self.progress(stage, done, total)

    def close(self):
        """Ends the last stage. A stage reported after this (the judge's
        verify, which records its own seconds) starts afresh: it does not
        add the last stage's time to it once more."""
        if self.last is not None:
            now = time.monotonic()
            self.stage_s[self.last] = round(self.stage_s.get(self.last, 0) + now - self.since, 4)
            self.last, self.since = None, now


def _verdict_of(checks):
    """The verdict the failed checks give: the worst by VERDICT_ORDER."""
    failed = checks.failed()
    for want in VERDICT_ORDER:
        if any(c["_verdict"] == want for c in failed):
            return want
    return "incorrect" if failed else "pass"


# A child still holding this much device memory once its caches are freed
# (a candidate keeping tensors in globals) keeps the device until it exits:
# the next evaluation's device phase would otherwise start short of memory.
HAND_BACK_MAX_BYTES = 1 << 30
# Free memory beyond what this child holds, times the jobs its device takes
# at once (_holders), that lets it hand the device back without emptying its
# cache first: every one of them may keep as much. With twice, 24 jobs on one
# H200 (a fleet worker on one GPU of a 64-core host) kept 4-16 GiB each
# until a reference ran out of memory with 217 MiB free, and 38 of 136
# evaluations ended runtime_error.
HAND_BACK_MARGIN = 8 << 30


def _holders():
    """The jobs the pool places on this device at once
    (KEVOLVE_DEVICE_HOLDERS, set by the Go side), at least 2."""
    try:
        return max(2, int(os.environ.get("KEVOLVE_DEVICE_HOLDERS") or 2))
    except ValueError:
        return 2


def _hand_back_device(ctx, st, verdict):
    """Ends the device phase before the child exits. The exit still has to
    tear the CUDA context down (0.1-0.2 s, serialized by the driver across a
    host's GPUs); that now overlaps the next evaluation's device phase
    instead of holding the device idle. A candidate caught cheating, or
    one that left threads that could still launch work, keeps the device
    until its process is gone."""
    device = st.device
    if verdict == "integrity_violation" or not st.may_hand_back_device():
        return
    try:
        if device.type == "cuda":
            # Nothing this context queued may still run once the next
            # evaluation's timing starts.
            torch.cuda.synchronize(device)
            # The exit frees everything anyway; freeing it now only pays
            # where the next evaluation could otherwise run short.
            free, _total = torch.cuda.mem_get_info(device)
            if free < _holders() * torch.cuda.memory_reserved(device) + HAND_BACK_MARGIN:
                release(device, force=True)
                if torch.cuda.memory_reserved(device) > HAND_BACK_MAX_BYTES:
                    return
        ctx.ungate()
    except BaseException:  # noqa: BLE001 - a faulted context: the device is handed back at the exit
        pass


def _out_of_memory(e, st, checks, res, stage):
    side = st.side
    who = (side.oom_side or side.now) if side is not None else "harness"
    if side is not None and side.device.type == "cuda":
        try:
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001
            pass
    mem = side.memory() if side is not None else {}
    earlier = [c["name"] for c in checks.failed() if c["_verdict"] == "integrity_violation"]
    detail = "the %s ran out of memory in stage %s: %s; peak device memory: reference %s, candidate %s" % (
        who, stage or "?", str(e).splitlines()[0][:400] if str(e) else type(e).__name__,
        _fmt_bytes(mem.get("reference_peak_bytes")), _fmt_bytes(mem.get("candidate_peak_bytes")))
    if mem.get("process_peak_rss_bytes"):
        detail += " (per-side peaks are measured on CUDA only); process peak RSS %s" % _fmt_bytes(mem["process_peak_rss_bytes"])
    res["oom_side"] = who
    if earlier:
        # The verdict was already final: running out of memory afterwards
        # cannot make an integrity violation anything else.
        checks.add("out_of_memory", False, detail + "; after the integrity violation(s) %s" % earlier, "integrity_violation")
        res["verdict"] = "integrity_violation"
        res["stage"] = "integrity"
        return
    checks.add("out_of_memory", False, detail, "runtime_error")
    res["verdict"] = "runtime_error"
    res["stage"] = stage or "init"


def _fmt_bytes(b):
    return "n/a" if b is None else "%.1f MiB" % (b / 2**20)

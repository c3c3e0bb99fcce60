"""One evaluation of a candidate (ModelNew) against a KernelBench-format
reference (Model, get_inputs, get_init_inputs), run in a forked child.

main(args, ctx) returns a dict (decoded by harness/convert.go, pyResult):
verdict, stage, checks, timing stats, warnings, memory, and work when
args["count_work"]. Every kernel failure becomes a verdict; a failing
reference is verdict reference_error; an out-of-memory error anywhere is
runtime_error with check out_of_memory; only an unusable request becomes
{"harness_error": ...}.

The stages live in modules of their own: evaluate_common (checks, errors,
loading), evaluate_hooks (launch counting), evaluate_ops (op traces),
evaluate_compare (comparison, poison), evaluate_timing (timer),
evaluate_integrity (audits, cached outputs, stream work), workcount (FLOPs
and bytes). This file runs them in order.
"""
import math
import os
import threading
import time

import torch

from evaluate_common import (Check, HarnessError, KernelFailure, ReferenceFailure, Side, clone_tree, flatten,
                             fmt_exc, free_device_bytes, guard_changed, guard_snapshot, is_compile_exception, is_oom,
                             load_module, nbytes, overlaps, release, short_trace, tensors_of, to_device, where_in)
from evaluate_compare import nan_fill, poison_allocator
from evaluate_degenerate import DegenerateWatch
from evaluate_fingerprint import Fingerprinter, differing_chunks, same
from evaluate_hooks import LaunchCounter, install_launch_hooks, triton_interpreter
from evaluate_integrity import (Auditor, InputRefresher, memoization_check, post_timing_call, private_rng,
                                stream_work_check)
from evaluate_ops import TRIVIAL_OPS, OpRecorder, OpTrace, heavy_aten, main_ops, same_trace
import evaluate_refops as refops
from evaluate_taint import Snapshot, reusable
from evaluate_tamper import RefGuard
from evaluate_tolerance import TrialJudge, profile_of
from evaluate_timing import AuditFailed, DeviceSpin, Timer, runqueue_wait_s, time_limit
from evaluate_warm import warm, warm_host
import evaluate_devstate as devstate
import evaluate_judge_client as judge_client

try:  # imported in the warm parent (0.1 s, no CUDA), so count_work costs no import
    import workcount
except Exception:  # noqa: BLE001 - counting is optional; _count_work reports it
    workcount = None

VERDICT_ORDER = ("integrity_violation", "compile_error", "runtime_error", "incorrect")
SANDBOX_SELF = True  # main() forks the judge (evaluate_judge), then enters the sandbox itself


def main(args, ctx):
    t_begin, w_begin = time.monotonic(), runqueue_wait_s()
    judge = judge_client.start(ctx, args)  # before any candidate code and before CUDA
    # Tensors cross to and from the judge as POSIX shared memory (and torch's
    # CUDA IPC keeps its reference counts there): /dev/shm stays writable.
    ctx.enter_sandbox(extra_write=[d for d in ("/dev/shm",) if os.path.isdir(d)])
    budget = float(args.get("budget_s") or 600)

    def remaining():
        # The time this process waited for a CPU is the host's load, not the
        # candidate's: Go's deadline grants it too (worker/load.go), up to ten times the budget.
        return budget - (time.monotonic() - t_begin) + min(runqueue_wait_s() - w_begin, 10 * budget)

    checks = Check()
    warnings = []
    res = {"checks": None, "warnings": warnings, "notes": [], "target": args.get("target", "cpu")}
    stage_s = {}
    res["stage_s"] = stage_s
    last = [None, time.monotonic()]
    progress = ctx.progress
    # The judge times the reference in its own process (the speedup's
    # denominator, out of the candidate's reach); this process does only
    # where there is no judge.
    state = {"side": None, "judge_times_reference": judge.sock is not None}

    def timed_progress(stage, done=0, total=0):
        if state["side"] is not None:
            state["side"].enter_stage(stage)
        now = time.monotonic()
        if last[0] is not None and last[0] != stage:
            stage_s[last[0]] = round(stage_s.get(last[0], 0) + now - last[1], 4)
            last[1] = now
        elif last[0] is None:
            last[1] = now
        last[0] = stage
        if stage == "timing_compile" and state.get("prof") is not None:
            state["prof"].disable()  # torch.compile's own import and codegen would drown the rest
        progress(stage, done, total)
    ctx.progress = timed_progress
    prof = state["prof"] = _profiler()
    try:
        if prof is not None:
            prof.runcall(_evaluate, args, ctx, checks, warnings, res, remaining, state)
        else:
            _evaluate(args, ctx, checks, warnings, res, remaining, state)
    except HarnessError as e:
        return {"harness_error": str(e)}
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
    except BaseException as e:  # noqa: BLE001 - out of memory anywhere in the child
        if not is_oom(e):
            raise
        _out_of_memory(e, state, checks, res, last[0])
    finally:
        _dump_profile(prof)
    if last[0] is not None:
        stage_s[last[0]] = round(stage_s.get(last[0], 0) + time.monotonic() - last[1], 4)
    if state.get("judge") is not None:
        state["judge"].finish(res, checks, _verdict_of)
    res["notes"] = list(dict.fromkeys(res["notes"]))
    res["checks"] = checks.export()
    side = state["side"]
    res["memory"] = side.memory() if side is not None else {"reference_peak_bytes": None, "candidate_peak_bytes": None}
    if "verdict" not in res:
        v = _verdict_of(checks)
        res["verdict"] = v
        v = None if v == "pass" else v
        if v and "stage" not in res:
            res["stage"] = "integrity" if v == "integrity_violation" else "correctness"
    res["correct"] = res["verdict"] == "pass"
    judge_client.verify(judge, res, state, ctx.progress, remaining())
    _hand_back_device(ctx, state, res["verdict"])
    if state.get("taint") is not None:
        ok, why = devstate.keep(state.get("device"), *judge_client.keep(judge, *reusable(state["taint"], res["verdict"])))
        if ok and state.get("device") is not None:
            # An idle child holds no cached device memory another
            # evaluation on its device could need.
            release(state["device"], force=True)
        ctx.reusable = ok
        res["process"] = {"job": getattr(ctx, "job_index", 1), "kept": ok, "why": why}
    return res


def _verdict_of(checks):
    """The verdict the failed checks give: the worst by VERDICT_ORDER."""
    failed = checks.failed()
    for want in VERDICT_ORDER:
        if any(c["_verdict"] == want for c in failed):
            return want
    return "incorrect" if failed else "pass"


# KEVOLVE_EVAL_PROFILE=DIR writes a cProfile of each evaluation, as text
# sorted by cumulative time, to DIR/eval-PID.txt: where a slow stage spends
# its time, measured where it runs (a forked child on the device).
PROFILE_ENV = "KEVOLVE_EVAL_PROFILE"


def _profiler():
    if not os.environ.get(PROFILE_ENV):
        return None
    import cProfile
    return cProfile.Profile()


def _dump_profile(prof):
    if prof is None:
        return
    import io
    import pstats
    try:
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out)
        st.sort_stats("cumulative").print_stats(r"evaluate|workcount|kevolve", 60)
        st.sort_stats("tottime").print_stats(40)
        with open(os.path.join(os.environ[PROFILE_ENV], "eval-%d.txt" % os.getpid()), "w") as f:
            f.write(out.getvalue())
    except OSError:
        pass


# A child still holding this much device memory once its caches are freed
# (a candidate keeping tensors in globals) keeps the device until it exits:
# the next evaluation's device phase would otherwise start short of memory.
HAND_BACK_MAX_BYTES = 1 << 30
# Free memory beyond twice what this child holds that lets it hand the
# device back without emptying its cache first.
HAND_BACK_MARGIN = 8 << 30


def _hand_back_device(ctx, state, verdict):
    """Ends the device phase before the child exits. The exit still has to
    tear the CUDA context down (0.1-0.2 s, serialized by the driver across a
    host's GPUs); that now overlaps the next evaluation's device phase
    instead of holding the device idle. A candidate caught cheating, or
    one that left threads that could still launch work, keeps the device
    until its process is gone."""
    device = state.get("device")
    if device is None or not getattr(ctx, "gated", False) or verdict == "integrity_violation":
        return
    before = state.get("threads_before")
    if before is None or any(t.ident not in before and t.is_alive() for t in threading.enumerate()):
        return
    try:
        if device.type == "cuda":
            # Nothing this context queued may still run once the next
            # evaluation's timing starts.
            torch.cuda.synchronize(device)
            # The exit frees everything anyway; freeing it now only pays
            # where the next evaluation could otherwise run short.
            free, _total = torch.cuda.mem_get_info(device)
            if free < 2 * torch.cuda.memory_reserved(device) + HAND_BACK_MARGIN:
                release(device, force=True)
                if torch.cuda.memory_reserved(device) > HAND_BACK_MAX_BYTES:
                    return
        ctx.ungate()
    except BaseException:  # noqa: BLE001 - a faulted context: the device is handed back at the exit
        pass


def _out_of_memory(e, state, checks, res, stage):
    side = state["side"]
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


def scratch_bytes(out_bytes, device):
    """Room kept free beside the tensors a check holds: the chunked
    comparison's temporaries (about ten chunk-sized ones, see
    evaluate_compare) and a margin for the programs' own temporaries."""
    import evaluate_common
    return 10 * min(out_bytes, evaluate_common.CHUNK * 4) + (1 << 30 if device.type == "cuda" else 128 << 20)


def _fmt_bytes(b):
    return "n/a" if b is None else "%.1f MiB" % (b / 2**20)


def _ref_failure(stage, what, e, ref_path):
    """A ReferenceFailure naming the reference's file:line, or the OOM as is."""
    if is_oom(e):
        return e
    loc = where_in(e, ref_path) or ref_path
    msg = "the reference's %s failed at %s: %s: %s" % (what, loc, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
    return ReferenceFailure(stage, msg, short_trace(e))


def _evaluate(args, ctx, checks, warnings, res, remaining, state):
    target = args.get("target", "cpu")
    seed = int(args.get("seed") or 42)
    trials = int(args.get("trials") or 5)
    judge = state["judge"] = TrialJudge(args.get("tolerance") or None, profile_of(args))
    tol = judge.flow_tol  # the trials compare through judge; later checks with this
    work_dir = getattr(ctx, "work_dir", ctx.job_dir)
    if target in ("nvidia", "amd"):  # ROCm builds of torch drive AMD GPUs as "cuda" devices too
        if not torch.cuda.is_available():
            raise HarnessError("target %s: torch.cuda.is_available() is False in the worker" % target)
        if (target == "amd") != bool(getattr(torch.version, "hip", None)):
            raise HarnessError("target %s: the worker's torch is a %s build" % (target, "ROCm" if torch.version.hip else "CUDA"))
        if torch.cuda._is_in_bad_fork():
            raise HarnessError("target %s: the worker parent initialized CUDA before forking; children cannot use it" % target)
        device = torch.device("cuda", 0)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        device = torch.device("cpu")
    side = Side(device, getattr(ctx, "board", None))
    state["side"] = side
    state["device"] = device
    if device.type == "cpu":
        # Smaller comparison chunks on the host: per-chunk overhead is
        # small there, and ten 64 MB temporaries are not.
        import evaluate_common
        evaluate_common.CHUNK = min(evaluate_common.CHUNK, 1 << 22)
    orig_timers = {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
                   "Event.elapsed_time": torch.cuda.Event.elapsed_time,
                   "cuda.synchronize": torch.cuda.synchronize}
    guard = guard_snapshot()

    # ---- reference: import
    ctx.progress("load_reference")
    ref_path = args["reference"].get("path") or None
    try:
        ref_mod, ref_path = load_module(args["reference"], "kevolve_reference", work_dir)
    except BaseException as e:  # noqa: BLE001
        raise _ref_failure("reference_import", "import", e, ref_path or "%s/kevolve_reference.py" % work_dir)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(ref_mod, name):
            raise ReferenceFailure("reference_import", "%s defines no %s (KernelBench format: Model, get_inputs, get_init_inputs)" % (ref_path, name))

    # ---- candidate: import
    triton_interpreter(device.type == "cpu")
    cand_code = args["candidate"].get("code") or ""
    if not cand_code and args["candidate"].get("path"):
        with open(args["candidate"]["path"]) as f:
            cand_code = f.read()
    # cpp_extension drags in setuptools (~0.3 s): only for candidates using it.
    uses_ext = "cpp_extension" in cand_code or "load_inline" in cand_code
    # The device phase is serialized per device by the Go side. The CUDA
    # context is made before it, and the kernels the checks use are loaded
    # (evaluate_warm), so both overlap the device phase of the evaluation
    # ahead: 16 concurrent evaluations on one H200 took 9.7 s instead of
    # 13.6 s once the context moved out of the device phase. Made before the
    # candidate is imported, the context is the harness's: a candidate
    # cannot break it, and torch's lazy CUDA set-up is done before the
    # snapshot below.
    spin = None
    if device.type == "cuda":
        ctx.progress("cuda_context")
        try:
            if not torch.cuda.is_initialized():  # a kept child has its context
                torch.zeros(1, device=device)
        except BaseException as e:  # noqa: BLE001 - the machine's fault, not the kernel's
            if is_oom(e):
                raise
            raise HarnessError("could not create a CUDA context on the leased device: %s" % (
                str(e).splitlines()[0][:300] if str(e) else type(e).__name__))
        ctx.progress("warm")
        warm(device, _source_of(args["reference"], ref_path))
        warnings.extend(w for w in [devstate.begin(device)] if w)
        spin = _SPINS.get(str(device)) or _SPINS.setdefault(str(device), DeviceSpin(device))

    try:
        import kevolve
        if uses_ext:
            kevolve.patch_load_inline()  # load_inline builds cached by source hash (after the context: it reads the arch)
    except Exception as e:  # noqa: BLE001 - the loaders are optional
        warnings.append("kevolve loaders unavailable: %r" % (e,))
    counter = LaunchCounter()
    install_launch_hooks(counter, uses_ext)
    if getattr(ctx, "reuse", False):
        # Everything up to here is the harness's own doing; from here on,
        # what changes is the candidate's (evaluate_taint).
        warm_host()
        state["taint"] = Snapshot()
    # What the reference runs on, as the harness left it (evaluate_tamper).
    tamper = RefGuard(checks, ref_mod)
    ctx.progress("load_candidate")
    t0, cpu0 = time.monotonic(), os.times()
    side.now = "candidate"
    try:
        cand_mod, _ = load_module(args["candidate"], "kevolve_candidate", work_dir)
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        v = "compile_error" if is_compile_exception(e) else "runtime_error"
        checks.add("load_candidate", False, fmt_exc(e), v)
        raise KernelFailure(v, "load_candidate", "")
    side.now = "harness"
    if not hasattr(cand_mod, "ModelNew"):
        checks.add("load_candidate", False, "candidate defines no ModelNew", "compile_error")
        raise KernelFailure("compile_error", "load_candidate", "")
    changed = guard_changed(guard)
    if changed:
        checks.add("harness_patched", False, "at import the candidate replaced functions the checks use: %s" % changed[:10],
                   "integrity_violation")
        raise KernelFailure("integrity_violation", "load_candidate", "")
    tamper.check("at the candidate's import")
    checks.add("load_candidate", True, "loaded in %.2f s" % (time.monotonic() - t0))
    res["load_s"] = round(time.monotonic() - t0, 3)
    cpu1 = os.times()  # the compilers the import ran (load_inline, load_c): their CPU, less load-bound than wall
    res["stage_s"]["load_candidate_cpu"] = round(cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 3)

    if device.type == "cuda":
        ctx.progress("wait_device")
        ctx.gate()

    # ---- construct both models from the same seed
    ctx.progress("init")

    def seed_all(s):
        torch.manual_seed(s)
        if device.type == "cuda":
            torch.cuda.manual_seed(s)
    side.now = "reference"
    try:
        init_inputs = ref_mod.get_init_inputs()
    except BaseException as e:  # noqa: BLE001
        raise _ref_failure("reference_init", "get_init_inputs()", e, ref_path)
    if not isinstance(init_inputs, (list, tuple)):
        raise ReferenceFailure("reference_init", "%s: get_init_inputs() returned a %s; KernelBench format wants a list of constructor arguments" % (
            ref_path, type(init_inputs).__name__))
    try:
        seed_all(seed)
        # Built under the device context: initializing an 8192x8192 Linear
        # on the host costs about a second. Both models draw their weights
        # from the same seed on the same generator, so they still match.
        with torch.device(device):
            ref_model = ref_mod.Model(*clone_tree(init_inputs)).to(device)
    except BaseException as e:  # noqa: BLE001
        raise _ref_failure("reference_init", "Model(*get_init_inputs())", e, ref_path)
    tamper.watch(ref_model)
    side.now = "candidate"
    try:
        seed_all(seed)
        with torch.device(device):
            cand_model = cand_mod.ModelNew(*clone_tree(init_inputs)).to(device)
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        v = "compile_error" if is_compile_exception(e) else "runtime_error"
        checks.add("construct", False, fmt_exc(e), v)
        raise KernelFailure(v, "init", "")
    side.now = "harness"
    checks.add("construct", True, "")
    state["cand_model"] = cand_model  # for the judge's verify stage
    # Weights match because both constructions start from the same seed
    # (KernelBench's convention); a candidate that creates its parameters in
    # another order gets other values and fails allclose, as in KernelBench.
    ref_model.eval()
    cand_model.eval()
    tamper.check("in the candidate's constructor")

    # Fingerprints (evaluate_fingerprint) stand in for copies wherever a
    # check only asks whether a tensor changed; weights drawn now, after the
    # candidate is loaded.
    fpr = Fingerprinter(private_rng(args, 2)[0])

    def make_inputs(s, checked=True):
        """The reference's get_inputs() for seed s. checked=False inside
        the timing loop, where a check per timed call would cost too much:
        the audits' reference calls check there (a change made to poison
        the next inputs is in place when the audit after the call runs)."""
        if checked:
            tamper.check("before the reference's get_inputs()")
        seed_all(s)
        prev = side.now
        side.now = "reference"
        # Factory calls in get_inputs() allocate on the device directly:
        # drawing a few hundred MB of random numbers on the host and copying
        # them over cost seconds per trial. Tensors a problem pins to the
        # CPU explicitly are still moved.
        try:
            with torch.device(device):
                x = ref_mod.get_inputs()
        except BaseException as e:  # noqa: BLE001
            raise _ref_failure("reference_inputs", "get_inputs()", e, ref_path)
        if not isinstance(x, (list, tuple)):
            raise ReferenceFailure("reference_inputs", "%s: get_inputs() returned a %s; KernelBench format wants a list of forward arguments" % (
                ref_path, type(x).__name__))
        x = to_device(x, device)
        side.now = prev
        if checked:
            tamper.settle()
        return x

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def ref_forward(inputs, *modes):
        """The reference's forward; its failures are reference errors."""
        def run():
            with torch.no_grad():
                if not modes:
                    out = ref_model(*inputs)
                else:
                    import contextlib
                    with contextlib.ExitStack() as st:
                        for m in modes:
                            st.enter_context(m)
                        out = ref_model(*inputs)
            sync()
            return out
        tamper.check("before a call of the reference")
        try:
            out = side.run("reference", run)
        except BaseException as e:  # noqa: BLE001
            raise _ref_failure("reference_forward", "forward", e, ref_path)
        tamper.settle()
        return out

    def ref_call(inputs):
        return ref_forward(inputs)

    threads_before = {t.ident for t in threading.enumerate()}
    state["threads_before"] = threads_before
    stream_before = torch.cuda.current_stream(device) if device.type == "cuda" else None

    def run_candidate(inputs, trial, *modes):
        def run():
            with torch.no_grad():
                import contextlib
                with contextlib.ExitStack() as st:
                    for m in modes:
                        st.enter_context(m)
                    out = cand_model(*inputs)
            sync()
            return out
        with nan_fill():
            try:
                return side.run("candidate", run)
            except BaseException as e:  # noqa: BLE001
                if is_oom(e):
                    raise
                v = "compile_error" if is_compile_exception(e) else "runtime_error"
                checks.add("run_candidate", False, "trial %d: %s" % (trial, fmt_exc(e)), v)
                raise KernelFailure(v, "correctness", "")

    # ---- correctness trials, recording both op traces
    # Memory per trial, as KernelBench: the inputs, the reference's output
    # and the candidate's (plus the allocator poison, released after this
    # stage). Both run on the same input tensors; chunk fingerprints taken
    # before and after each call show whether either wrote its inputs, and
    # stand in for the earlier trials' outputs.
    ref_ops_all = {}
    cand_ops_all = {}
    ref_aten = set()  # the heavy aten ops each side dispatched (evaluate_ops.heavy_aten)
    cand_aten = set()
    same_as_ref = None
    prev = []  # fingerprints of (ref outputs, cand outputs) of earlier trials
    degen = DegenerateWatch()
    launches0 = counter.n  # kernels launched by the candidate's forward calls count as its own, not its constructor's
    ref_mutates = False
    ref_aliases = False
    out_bytes = 0
    want_work = bool(args.get("count_work"))
    ctx.progress("correctness", 0, trials)
    for trial in range(trials):
        if remaining() < 1:
            raise KernelFailure("timeout", "correctness", "time budget exhausted during correctness trials")
        s_in = seed + 1000003 * (trial + 1)
        inputs = make_inputs(s_in)
        fp_in = fpr.of(tensors_of(inputs))
        rec, trace = OpRecorder(), OpTrace()
        if trial == 0 and want_work:
            ref_out = _count_work(ref_forward, inputs, ref_model, rec, trace, res, warnings, device)
        else:
            ref_out = ref_forward(inputs, rec, trace)
        for k, v in rec.ops.items():
            ref_ops_all[k] = ref_ops_all.get(k, 0) + v
        if any(overlaps(o, i) for o in tensors_of(ref_out) for i in tensors_of(inputs)):
            ref_aliases = True
        if not same(fp_in, fpr.of(tensors_of(inputs))):
            # The reference writes its inputs: the candidate gets the same
            # values again, from the same seed.
            ref_mutates = True
            del inputs
            inputs = make_inputs(s_in)
            if not same(fp_in, fpr.of(tensors_of(inputs))):
                # get_inputs() does not reproduce its values from the seed:
                # the reference runs again on a copy of these.
                del ref_out
                ref_in = clone_tree(inputs)
                ref_out = ref_forward(ref_in)
                del ref_in
                fp_in = fpr.of(tensors_of(inputs))
        degen.add(fpr, fp_in, ref_out)
        if trial == 0:
            out_bytes = nbytes(ref_out)
            # Poisoned now that the inputs and the reference's outputs
            # exist, leaving room for the candidate's outputs and as much
            # again in temporaries.
            ctx.progress("poison")
            poisoned, poison_detail = poison_allocator(device, keep_free=2 * out_bytes + (1 << 30), out_bytes=out_bytes)
            ctx.progress("correctness", trial, trials)
            checks.add("poisoned_allocator", True, poison_detail)
            if device.type == "cuda" and not poisoned:
                warnings.append("allocator poison skipped: " + poison_detail)

        cand_in = inputs
        crec, ctrace = OpRecorder(), OpTrace()
        out = run_candidate(cand_in, trial, crec, ctrace)
        for k, v in crec.ops.items():
            cand_ops_all[k] = cand_ops_all.get(k, 0) + v
        # Any trial whose dispatched ops are the reference's is enough.
        same_as_ref = same_as_ref or same_trace(trace.ops, ctrace.ops)
        if trial == 0:
            ref_trace = trace.ops  # for the calls traced once timed
        ref_aten |= heavy_aten(trace.ops)
        cand_aten |= heavy_aten(ctrace.ops)
        del rec, trace, crec, ctrace

        # Output types: a subclass or a lazy object could fake its values.
        outs, refs = flatten(out), flatten(ref_out)
        for o in outs:
            if isinstance(o, torch.Tensor) and type(o) not in (torch.Tensor, torch.nn.Parameter):
                checks.add("output_type", False, "output is a %s, a tensor subclass; return a plain torch.Tensor" % type(o).__name__,
                           "integrity_violation")
                raise KernelFailure("integrity_violation", "correctness", "")
        if len(outs) != len(refs):
            checks.add("output_type", False, "candidate returned %d outputs, the reference %d" % (len(outs), len(refs)), "incorrect")
            raise KernelFailure("incorrect", "correctness", "")
        for i, (o, r) in enumerate(zip(outs, refs)):
            if isinstance(r, torch.Tensor) and not isinstance(o, torch.Tensor):
                checks.add("output_type", False, "output %d is a %s, expected a torch.Tensor" % (i, type(o).__name__), "integrity_violation")
                raise KernelFailure("integrity_violation", "correctness", "")
        checks.add("output_type", True, "")

        if not ref_mutates:
            bad = sorted({i for i, _k in differing_chunks(fp_in, fpr.of(tensors_of(cand_in)))})
            checks.add("input_mutation", not bad, "candidate modified input(s) %s in place" % bad if bad else "", "integrity_violation")
        if not ref_aliases:
            al = [(j, i) for j, o in enumerate(tensors_of(out)) for i, t in enumerate(tensors_of(cand_in)) if overlaps(o, t)]
            checks.add("output_aliasing", not al, "output/input pairs sharing memory: %s" % al if al else "", "integrity_violation")

        trial_ok = True
        for i, (o, r) in enumerate(zip(outs, refs)):
            if isinstance(r, torch.Tensor):
                ok, name, detail = judge.compare(i, r, o, res["notes"])
                checks.add(name, ok, ("trial %d: " % trial) + detail, "incorrect")
                if ok and name == "allclose":
                    checks.add("relative_norm", True, "")
                trial_ok = trial_ok and ok
            else:
                ok = (o == r) if not isinstance(r, float) else math.isclose(o, r, rel_tol=1e-4, abs_tol=1e-6)
                checks.add("allclose", bool(ok), "trial %d: output %d = %r, expected %r" % (trial, i, o, r), "incorrect")
                trial_ok = trial_ok and bool(ok)
        fp_pair = (fpr.of(tensors_of(ref_out)), fpr.of(tensors_of(out)))
        if not trial_ok:
            # A wrong answer that equals an earlier trial's answer on new
            # inputs is a cached output, not a numerical error.
            for (pr, po) in prev:
                if same(po, fp_pair[1]) and not same(pr, fp_pair[0]):
                    checks.add("memoization", False, "trial %d returned trial-earlier outputs for new inputs (cached across calls)" % trial,
                               "integrity_violation")
                    break
            break
        prev.append(fp_pair)
        ctx.progress("correctness", trial + 1, trials)
        # o and r (loop variables above) hold the last output pair too.
        o = r = None
        del out, ref_out, cand_in, inputs, outs, refs
    res["trials"] = trials
    degen.check(ref_path)
    del prev, degen
    release(device)  # the poison goes before the next stage where memory is short

    if checks.failed():
        return

    # ---- integrity: reference ops, threads, streams, timers first: any
    # failure there is final (integrity_violation outranks every other
    # verdict), so the evaluation ends before the calls and the memory the
    # later checks and timing need.
    ctx.progress("integrity")
    mains = main_ops(ref_ops_all)
    policy, own = refops.policy_of(args), counter.n > launches0
    why, names = refops.used(mains, ref_aten, cand_ops_all, cand_aten)
    refops.judge(checks, res["notes"], policy, same_as_ref, why, names, own, mains, lambda: refops.library_share(
        lambda timer: run_candidate(make_inputs(seed + 7), -4, timer), device, ref_aten))
    if not own:
        warnings.append("no custom kernel ran (no kevolve, Triton, load_inline or cupy launch): the candidate is plain torch ops")
    res["custom_launches"] = counter.n
    res["launch_kinds"] = sorted(counter.kinds)
    res["candidate_ops"] = sorted(k for k in cand_ops_all if k not in TRIVIAL_OPS)[:50]

    def new_threads():
        return [t.name for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]

    def static_checks():
        left = new_threads()
        checks.add("threads", not left, ("candidate left threads running: %s" % left) if left else "", "integrity_violation")
        if stream_before is not None:
            same_stream = torch.cuda.current_stream(device) == stream_before
            checks.add("stream", same_stream, "" if same_stream else "candidate changed the current CUDA stream", "integrity_violation")
        patched = [k for k, f in orig_timers.items() if
                   {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
                    "Event.elapsed_time": torch.cuda.Event.elapsed_time, "cuda.synchronize": torch.cuda.synchronize}[k] is not f]
        checks.add("timers", not patched, ("candidate patched %s" % patched) if patched else "", "integrity_violation")
        changed = guard_changed(guard)
        checks.add("harness_patched", not changed, ("candidate replaced functions the checks use: %s" % changed[:10]) if changed else "",
                   "integrity_violation")
    static_checks()
    if checks.failed():
        return

    # cached outputs: same buffers, new values
    def fits(extra):
        free = free_device_bytes(device)
        return free is None or extra + scratch_bytes(out_bytes, device) <= free
    ok, detail, warn = memoization_check(run_candidate, ref_call, make_inputs, seed, tol, fpr, fits)
    checks.add("memoization", ok, detail, "integrity_violation")
    if warn:
        warnings.append(warn)
    static_checks()  # the memoization calls may have started threads or patched something
    release(device)
    if checks.failed() or args.get("skip_timing"):
        return

    # ---- timing, with refreshed inputs and audits
    ctx.progress("timing")
    if device.type != "cuda":
        ctx.gate()
    flush = int(args.get("flush_bytes") or (256 << 20 if device.type == "cuda" else 32 << 20))
    timer = Timer(device, flush, spin)
    if timer.spin is not None and timer.spin.kernel is None:
        warnings.append("timing used the " + timer.spin.note)
    cap = float(args.get("timing_cap_s") or (3.0 if device.type == "cuda" else 1.5))
    # One set of timed inputs serves both programs (the reference is timed
    # after the candidate, on refreshed values): KernelBench holds one too.
    cin = list(make_inputs(seed + 99))  # a list: the refresher may replace its items
    rin = cin
    rng, audit_seed = private_rng(args, 1)
    refresher = InputRefresher(lambda s: make_inputs(s, checked=False), cin, rng)
    in_bytes = nbytes(cin)
    free = free_device_bytes(device)
    if free is not None:
        # Refreshing holds a second copy of the inputs through each call,
        # beside the output and, in an audit, the reference's output, a copy
        # of the output (up to 256 MiB) and the comparison's temporaries.
        if in_bytes + 3 * out_bytes + scratch_bytes(out_bytes, device) > free:
            refresher.note = ("inputs of %.1f GiB are too large to refresh before each timed call with %.1f GiB free: "
                              "timed inputs keep their values; audits still compare against the reference" % (in_bytes / 2**30, free / 2**30))
    # Audits run the reference without a synchronize: a sync at audited
    # iterations only would be a pattern the candidate could observe.
    def ref_nosync(x):
        tamper.check("before an audit's call of the reference")
        with torch.no_grad():
            out = ref_model(*x)
        tamper.settle()
        return out
    auditor = Auditor(rng, ref_nosync, cin, tol, fpr)

    def cand_fn():
        with torch.no_grad():
            return cand_model(*cin)

    def ref_fn():
        with torch.no_grad():
            return ref_model(*rin)
    side.now = "candidate"
    try:
        res["candidate"] = timer.bench(cand_fn, cap, refresh=refresher, auditor=auditor)
    except AuditFailed as e:
        checks.add("audit", False, "%s (audit seed %d)" % (e, audit_seed), "integrity_violation")
        raise KernelFailure("integrity_violation", "timing", "")
    except (ReferenceFailure, KernelFailure):
        raise
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        checks.add("run_candidate", False, "during timing: " + fmt_exc(e), "runtime_error")
        raise KernelFailure("runtime_error", "timing", "")
    # A thread of the candidate's running through the reference's timing
    # could slow it (the CPU, Python's lock): none may be alive around it.
    def no_threads_around_ref_timing(when):
        left = new_threads()
        if left:
            checks.add("threads", False, "%s the reference's timing, the candidate's threads were running: %s" % (when, left),
                       "integrity_violation")
            raise KernelFailure("integrity_violation", "timing", "")
    tamper.check("before the reference's timing")
    if not devstate.check(device, checks, "before the reference's timing,"):
        raise KernelFailure("integrity_violation", "timing", "")
    no_threads_around_ref_timing("before")
    if not state.get("judge_times_reference"):
        side.now = "reference"
        res["ref_eager"] = timer.bench(ref_fn, cap)
        side.now = "harness"
    tamper.settle()
    no_threads_around_ref_timing("after")
    res["timed_inputs_refreshed"] = refresher.n
    for note in (refresher.note, refresher.swapped):
        if note:
            warnings.append(note)

    if device.type == "cuda":
        ctx.progress("stream_check")
        side.now = "candidate"
        try:
            ok, detail, kind = stream_work_check(cand_fn, ref_fn, refresher, ref_call, tol, device, fpr, rng=rng)
        except (ReferenceFailure, KernelFailure):
            raise
        except BaseException as e:  # noqa: BLE001
            if is_oom(e):
                raise
            ok, detail, kind = False, "during the stream check calls: " + fmt_exc(e), "run_candidate"
        side.now = "harness"
        if timer.spin is not None:
            detail += "; timed with a " + timer.spin.note
        checks.add(kind, ok, detail, "runtime_error" if kind == "run_candidate" else "integrity_violation")
    # The timed inputs go before the call on fresh ones.
    audited, traced = auditor.audited, auditor.traced
    del auditor, refresher, cin, rin, cand_fn, ref_fn
    release(device)

    def ref_ops_once_timed(where, ops, trace_ops):
        """The reference_ops check on a call made once timed: a candidate
        may compute its own way through the correctness trials and switch
        to the reference's ops afterwards."""
        why = same_trace(ref_trace, trace_ops)
        if not why:
            why = refops.used(mains, ref_aten, ops, heavy_aten(trace_ops))[0]
            why = why if refops.violates(policy, own, why) else ""
        if why:
            checks.add("reference_ops", False,
                       "%s: %s, which the correctness trials did not show; implement them in a kernel" % (where, why),
                       "integrity_violation")
    for where, ops, trace_ops in traced:
        if not checks.failed():
            ref_ops_once_timed("once timed (" + where + ", untimed)", ops, trace_ops)

    if not checks.failed():
        ctx.progress("after_timing")
        post_rec, post_trace = OpRecorder(), OpTrace()
        ok, detail = post_timing_call(lambda x: run_candidate(x, -3, post_rec, post_trace), ref_call, make_inputs, seed + 4242, tol, fpr,
                                      ref_mutates)
        if ok:
            detail = ("%d timed iterations audited at random (%s) and %d traced calls among them, all matched the reference; "
                      "%s (audit seed %d)") % (len(audited), audited[:20], len(traced), detail, audit_seed)
        checks.add("audit", ok, detail, "integrity_violation")
        if ok:
            ref_ops_once_timed("after timing (a call on fresh inputs, traced)", post_rec.ops, post_trace.ops)
        del post_rec, post_trace
        release(device)

    if not checks.failed():
        tamper.check("after timing")
    changed = guard_changed(guard)
    if changed:
        checks.add("harness_patched", False, "during timing the candidate replaced functions the checks use: %s" % changed[:10],
                   "integrity_violation")
        return
    sol = float(args.get("sol_seconds") or 0)
    if sol > 0:
        med = res["candidate"]["median_s"]
        ok = med >= 0.9 * sol
        checks.add("faster_than_sol", ok, "median %.4g s vs speed-of-light %.4g s" % (med, sol), "integrity_violation")
    if checks.failed():
        return

    compile_cap = float(args.get("compile_cap_s") or 90)
    want_compile = args.get("compile_reference")
    if want_compile is None:
        want_compile = device.type == "cuda"
    if want_compile and remaining() > compile_cap + 10:
        ctx.progress("timing_compile")
        rin = make_inputs(seed + 99)
        try:
            with time_limit(compile_cap):
                cmodel = torch.compile(ref_model)
                with torch.no_grad():
                    cmodel(*rin)
                sync()

            def comp_fn():
                with torch.no_grad():
                    return cmodel(*rin)
            res["ref_compile"] = timer.bench(comp_fn, cap)
        except BaseException as e:  # noqa: BLE001
            if is_oom(e):
                warnings.append("torch.compile of the reference ran out of memory; no compiled timing")
            else:
                warnings.append("torch.compile of the reference failed or timed out: %s" % str(e).splitlines()[0][:300] if str(e) else type(e).__name__)
    elif want_compile:
        warnings.append("skipped torch.compile timing of the reference: not enough time left in the budget")


# The timer's spin kernel, compiled once per process (a child that serves
# several evaluations keeps it).
_SPINS = {}


def _source_of(src, path):
    """A reference's text, from its code or its file ("" if unreadable)."""
    if src.get("code"):
        return src["code"]
    try:
        with open(path or src.get("path") or "") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return ""


def _count_work(ref_forward, ref_in, ref_model, rec, trace, res, warnings, device):
    """Runs the reference's first forward under the work counter as well
    (count_work): FLOPs and bytes of the real inputs, at no extra run."""
    try:
        if workcount is None:
            raise ImportError("workcount.py did not import")
        c = workcount.Counter()
        modes = (rec, workcount.Attention(c), c, trace)
    except Exception as e:  # noqa: BLE001
        warnings.append("work counting unavailable: %s" % e)
        return ref_forward(ref_in, rec, trace)
    out = ref_forward(ref_in, *modes)
    try:
        w = workcount.summarize(c, ref_in, ref_model, out, device)
        res["work"] = {"flops": w["flops"], "bytes": w["bytes"], "dtype": w["dtype"], "method": "traced",
                       "ops": [o for o in w["ops"] if o["flops"]][:20], "bytes_detail": w["bytes_detail"]}
    except Exception as e:  # noqa: BLE001
        warnings.append("work counting failed: %s" % e)
    return out

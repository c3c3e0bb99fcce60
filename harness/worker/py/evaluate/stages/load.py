"""The stages up to two built models: setup (the device and the patch
guard), load_reference, prepare (the CUDA context and the harness's own
kernels, the launch hooks: all before any candidate code), load_candidate
and construct. A failure of the reference is a ReferenceFailure, of the
candidate a KernelFailure; both end the evaluation."""
import gc
import os
import threading
import time

import torch

from evaluate.common import (HarnessError, KernelFailure, ReferenceFailure, Side, clone_tree, fmt_exc, guard_changed,
                             guard_snapshot, identity_snapshot, is_compile_exception, is_oom, load_module, release)
from evaluate.compare.construct import build, init_inputs_of, kernelbench_way_needed
from evaluate.guards.fingerprint import Fingerprinter
from evaluate.guards.hooks import LaunchCounter, install_launch_hooks, triton_interpreter
from evaluate.compare.inputs_blame import Probe
from evaluate.guards.integrity import private_rng
from evaluate.guards.taint import Snapshot
from evaluate.guards.tamper import RefGuard
from evaluate.timing import DeviceSpin
from evaluate.compare.tolerance import TrialJudge, profile_of
from evaluate.warm import warm, warm_host
from evaluate.guards import devstate
from evaluate.compare import fastcmp

# The timer's spin kernel, compiled once per process (a child that serves
# several evaluations keeps it).
_SPINS = {}


def setup(st):
    job = st.job
    st.trial_judge = TrialJudge(job.tolerance, profile_of(job.tolerance_rule))
    st.tol = st.trial_judge.flow_tol  # the trials compare through the judge; later checks with this
    st.device = device = _device_of(job.target)
    st.side = Side(device, getattr(st.ctx, "board", None))
    if device.type == "cpu":
        # Smaller comparison chunks on the host: per-chunk overhead is
        # small there, and ten 64 MB temporaries are not.
        from evaluate import common as evaluate_common
        evaluate_common.CHUNK = min(evaluate_common.CHUNK, 1 << 22)
    st.orig_timers = {"perf_counter": time.perf_counter, "perf_counter_ns": time.perf_counter_ns,
                      "Event.elapsed_time": torch.cuda.Event.elapsed_time, "cuda.synchronize": torch.cuda.synchronize}
    st.guard = guard_snapshot()


def _device_of(target):
    if target not in ("nvidia", "amd"):
        return torch.device("cpu")
    # ROCm builds of torch drive AMD GPUs as "cuda" devices too.
    if not torch.cuda.is_available():
        raise HarnessError("target %s: torch.cuda.is_available() is False in the worker" % target)
    if (target == "amd") != bool(getattr(torch.version, "hip", None)):
        raise HarnessError("target %s: the worker's torch is a %s build" % (target, "ROCm" if torch.version.hip else "CUDA"))
    if torch.cuda._is_in_bad_fork():
        raise HarnessError("target %s: the worker parent initialized CUDA before forking; children cannot use it" % target)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch.device("cuda", 0)


def load_reference(st):
    st.ctx.progress("load_reference")
    src = st.job.reference
    path = src.get("path") or None
    try:
        st.ref_mod, st.ref_path = load_module(src, "kevolve_reference", st.work_dir)
    except BaseException as e:  # noqa: BLE001
        raise st.ref_failure("reference_import", "import", e, path or "%s/kevolve_reference.py" % st.work_dir)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(st.ref_mod, name):
            raise ReferenceFailure("reference_import", "%s defines no %s (KernelBench format: Model, get_inputs, get_init_inputs)" % (
                st.ref_path, name))


def prepare(st):
    """Everything before the candidate's import that is the harness's own.
    The device phase is serialized per device by the Go side. The CUDA
    context is made before it, and the kernels the checks use are loaded
    (evaluate.warm), so both overlap the device phase of the evaluation
    ahead: 16 concurrent evaluations on one H200 took 9.7 s instead of
    13.6 s once the context moved out of the device phase. Made before the
    candidate is imported, the context is the harness's: a candidate
    cannot break it, and torch's lazy CUDA set-up is done before the
    snapshots below."""
    device = st.device
    triton_interpreter(device.type == "cpu")
    cand_code = st.cand_code = _candidate_code(st.job.candidate)
    # cpp_extension drags in setuptools (~0.3 s): only for candidates using it.
    st.uses_ext = "cpp_extension" in cand_code or "load_inline" in cand_code
    if device.type == "cuda":
        _cuda_context(st)
    try:
        import kevolve
        if st.uses_ext:
            kevolve.patch_load_inline()  # load_inline builds cached by source hash (after the context: it reads the arch)
    except Exception as e:  # noqa: BLE001 - the loaders are optional
        st.warnings.append("kevolve loaders unavailable: %r" % (e,))
    st.counter = LaunchCounter()
    install_launch_hooks(st.counter, st.uses_ext)
    # What the harness made so far lives as long as this process (a kept
    # child's imports, its CUDA state, torch.compile's modules): moved out
    # of the collector's reach, as the worker parent does with its own,
    # so each release()'s gc.collect() in the device phase scans only what
    # this job makes (in a kept child with inductor loaded, eight full
    # collections took a good part of an evaluation's device phase).
    gc.collect()
    gc.freeze()
    if getattr(st.ctx, "reuse", False):
        # Everything up to here is the harness's own doing; from here on,
        # what changes is the candidate's (evaluate.guards.taint).
        warm_host()
        st.taint = Snapshot()
    # What the reference runs on, as the harness left it (evaluate.guards.tamper).
    st.tamper = RefGuard(st.checks, st.ref_mod)
    # The first trial's inputs, made before any candidate code: a later
    # get_inputs() failure is then judged against them (evaluate.compare.inputs_blame).
    st.inputs_probe = Probe(st.job.seed + 1000003)
    st.inputs_probe.run(st)


def _candidate_code(src):
    code = src.get("code") or ""
    if not code and src.get("path"):
        with open(src["path"]) as f:
            code = f.read()
    return code


def _cuda_context(st):
    device = st.device
    st.ctx.progress("cuda_context")
    try:
        if not torch.cuda.is_initialized():  # a kept child has its context
            torch.zeros(1, device=device)
    except BaseException as e:  # noqa: BLE001 - the machine's fault, not the kernel's
        if is_oom(e):
            raise
        raise HarnessError("could not create a CUDA context on the leased device: %s" % (
            str(e).splitlines()[0][:300] if str(e) else type(e).__name__))
    st.ctx.progress("warm")
    warm(device, _source_of(st.job.reference, st.ref_path))
    st.warnings.extend(w for w in [devstate.begin(device)] if w)
    st.spin = _SPINS.get(str(device)) or _SPINS.setdefault(str(device), DeviceSpin(device))
    # The comparison's kernel, built here, before the device phase and
    # before the candidate is imported; the guard then covers it.
    if fastcmp.prepare(device):
        st.guard.update(identity_snapshot(fastcmp.guard_entries()))


def _source_of(src, path):
    """A reference's text, from its code or its file ("" if unreadable)."""
    if src.get("code"):
        return src["code"]
    try:
        with open(path or src.get("path") or "") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return ""


def load_candidate(st):
    st.ctx.progress("load_candidate")
    t0, cpu0 = time.monotonic(), os.times()
    st.side.now = "candidate"
    try:
        st.cand_mod, _ = load_module(st.job.candidate, "kevolve_candidate", st.work_dir)
    except BaseException as e:  # noqa: BLE001
        if is_oom(e):
            raise
        v = "compile_error" if is_compile_exception(e) else "runtime_error"
        st.checks.add("load_candidate", False, fmt_exc(e), v)
        raise KernelFailure(v, "load_candidate", "")
    st.side.now = "harness"
    if not hasattr(st.cand_mod, "ModelNew"):
        st.checks.add("load_candidate", False, "candidate defines no ModelNew", "compile_error")
        raise KernelFailure("compile_error", "load_candidate", "")
    changed = guard_changed(st.guard)
    if changed:
        st.checks.add("harness_patched", False, "at import the candidate replaced functions the checks use: %s" % changed[:10],
                      "integrity_violation")
        raise KernelFailure("integrity_violation", "load_candidate", "")
    st.tamper.check("at the candidate's import")
    st.checks.add("load_candidate", True, "loaded in %.2f s" % (time.monotonic() - t0))
    st.res["load_s"] = round(time.monotonic() - t0, 3)
    cpu1 = os.times()  # the compilers the import ran (load_inline, load_c): their CPU, less load-bound than wall
    st.res["stage_s"]["load_candidate_cpu"] = round(cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 3)


def construct(st):
    """Both models from the same seed. Weights match because both
    constructions start from it (KernelBench's convention); a candidate
    that creates its parameters in another order gets other values and
    fails allclose, as in KernelBench. Before the device phase: many
    candidates build their extension in the constructor (CUDA-L1's
    load_inline kernels held the device 15-35 s each while nvcc ran)."""
    st.ctx.progress("init")
    init_inputs = _init_inputs(st)
    try:
        _construct_both(st, init_inputs)
    except BaseException as e:  # noqa: BLE001
        if not _crowded_out(st, e):
            raise
        crowded = True  # built again below, once this exception's frames (and their tensors) are gone
    else:
        crowded = False
    if crowded:
        _construct_in_device_phase(st, init_inputs)
    st.side.now = "harness"
    st.checks.add("construct", True, "")
    # Both models stay in the mode they were built in (training, unless
    # a constructor says otherwise), as KernelBench runs them
    # (evaluate.compare.construct).
    st.tamper.check("in the candidate's constructor")
    # Fingerprints (evaluate.guards.fingerprint) stand in for copies wherever a
    # check only asks whether a tensor changed; weights drawn now, after the
    # candidate is loaded.
    st.fpr = Fingerprinter(private_rng(st.job.audit_seed, 2)[0])
    st.threads_before = {t.ident for t in threading.enumerate()}
    st.stream_before = torch.cuda.current_stream(st.device) if st.device.type == "cuda" else None


def _crowded_out(st, e):
    """Whether an out-of-memory came before the device phase, when the
    device is shared with the other evaluations placed on it
    (lease.HoldersPerGPU): their models and contexts may be what filled it."""
    return is_oom(e) and st.device.type == "cuda" and not getattr(st.ctx, "gated", False)


def _construct_in_device_phase(st, init_inputs):
    """Builds both models again once the device is this evaluation's: an
    out-of-memory then is this problem's own."""
    st.ref_model = st.cand_model = None
    gc.collect()
    release(st.device, force=True)
    st.ctx.progress("wait_device")
    st.ctx.gate()
    st.ctx.progress("init")
    st.res["notes"].append("the models did not fit beside other evaluations' on the device; built again in the device phase")
    _construct_both(st, init_inputs)


def _construct_both(st, init_inputs):
    # Built under the device context: initializing an 8192x8192 Linear on
    # the host costs about a second. Both models draw their weights from the
    # same seed on the same generator, so they still match, unless a
    # constructor escapes the context (evaluate.compare.construct): then both are
    # built again KernelBench's way, on the host.
    ref_drew = _construct_reference(st, init_inputs, True)
    cand_drew, first_error = _construct_candidate(st, init_inputs, True)
    if first_error is not None or kernelbench_way_needed(st.device, ref_drew, cand_drew):
        _construct_on_host(st, init_inputs, first_error)


def _construct_reference(st, init_inputs, under_context):
    st.side.now = "reference"
    try:
        st.seed_all(st.job.seed)
        st.ref_model, drew = build(st.ref_mod.Model, init_inputs, st.device, under_context)
    except BaseException as e:  # noqa: BLE001
        raise st.ref_failure("reference_init", "Model(*get_init_inputs())", e)
    st.tamper.watch(st.ref_model)
    return drew


def _construct_candidate(st, init_inputs, under_context):
    """(drew from the host's generator, the error of a first construction
    under the device context that the host may not have)."""
    st.side.now = "candidate"
    try:
        st.seed_all(st.job.seed)
        st.cand_model, drew = build(st.cand_mod.ModelNew, init_inputs, st.device, under_context)
        return drew, None
    except BaseException as e:  # noqa: BLE001
        if not under_context or is_oom(e) or is_compile_exception(e) or not isinstance(e, Exception):
            _construct_failed(st, e)
        return False, ("%s: %s" % (type(e).__name__, e))[:300]  # not e: its frames hold the first models' tensors


def _construct_on_host(st, init_inputs, first_error):
    # What the first constructor changed is caught now, before the new
    # reference model becomes the baseline.
    st.tamper.check("in the candidate's constructor")
    why = ("the candidate's constructor failed under the device context (%s)" % first_error if first_error is not None
           else "under the device context, a constructor drew weights from the host's generator, not the device's")
    st.ref_model = st.cand_model = None
    _construct_reference(st, init_inputs, False)
    _construct_candidate(st, init_inputs, False)
    st.constructed_on_host = True  # the judge builds its reference the same way
    st.res["notes"].append("both models were constructed on the host and moved, as KernelBench does: %s" % why)


def _construct_failed(st, e):
    if is_oom(e):
        raise e
    v = "compile_error" if is_compile_exception(e) else "runtime_error"
    st.checks.add("construct", False, fmt_exc(e), v)
    raise KernelFailure(v, "init", "")


def _init_inputs(st):
    st.side.now = "reference"
    try:
        init_inputs = init_inputs_of(st.ref_mod, st.job.seed, st.device)
    except BaseException as e:  # noqa: BLE001
        raise st.ref_failure("reference_init", "get_init_inputs()", e)
    if not isinstance(init_inputs, (list, tuple)):
        raise ReferenceFailure("reference_init", "%s: get_init_inputs() returned a %s; KernelBench format wants a list of constructor arguments" % (
            st.ref_path, type(init_inputs).__name__))
    return init_inputs

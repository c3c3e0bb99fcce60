"""The state one evaluation's stages share (evaluate/stages/), and the calls
every stage makes through it: the reference's inputs and forward, the
candidate's forward. Each stage fills in what the later ones read; the
fields are grouped by the stage that sets them."""
import contextlib
import threading

import torch

from evaluate.common import (KernelFailure, ReferenceFailure, fmt_exc, free_device_bytes, is_compile_exception, is_oom,
                             short_trace, to_device, where_in)
from evaluate.compare.compare import nan_fill
from evaluate.compare.inputs_blame import blame
from evaluate.guards.ops import OpRecorder, OpTrace


class EvalState:
    def __init__(self, job, ctx, checks, res, remaining):
        self.job, self.ctx, self.checks, self.res = job, ctx, checks, res
        self.warnings = res["warnings"]
        self.remaining = remaining  # seconds of the budget left (evaluate.main)
        self.work_dir = getattr(ctx, "work_dir", ctx.job_dir)
        self.prof = None  # the cProfile of KEVOLVE_EVAL_PROFILE
        # setup
        self.device = self.side = None
        self.trial_judge = self.tol = None  # evaluate.compare.tolerance.TrialJudge and the tolerance later checks use
        self.orig_timers = self.guard = None
        # load_reference, prepare, load_candidate, construct
        self.ref_mod = self.ref_path = self.ref_model = None
        self.uses_ext, self.spin, self.counter, self.taint, self.tamper = False, None, None, None, None
        self.cand_mod = self.cand_model = None
        self.inputs_probe = None  # evaluate.compare.inputs_blame.Probe: the first trial's inputs, made before the candidate
        self.fpr = None  # evaluate.guards.fingerprint.Fingerprinter
        self.threads_before, self.stream_before = None, None
        # correctness
        self.ref_ops_all, self.cand_ops_all = {}, {}
        self.ref_aten, self.cand_aten = set(), set()  # heavy aten ops each side dispatched (evaluate.guards.ops.heavy_aten)
        self.same_as_ref = self.ref_trace = None
        self.launches0 = 0  # launches before the forward calls: the constructor's, not the forward's
        self.ref_mutates = self.ref_aliases = False
        self.out_bytes = 0
        # reference_ops, integrity
        self.mains = self.policy = None
        self.own = False
        # timing and after
        self.timer = self.cap = None
        self.judge_times_reference = False  # evaluate.main: the judge's process times the reference
        self.cand_code = ""  # the candidate's source, read before its import
        self.constructed_on_host = False  # evaluate.stages.load: both models built KernelBench's way
        self.timed = None  # evaluate.stages.timing's inputs, refresher and auditor, until the stream check
        self.audited, self.traced, self.audit_seed = [], [], None
        # evaluate.guards.stateful: whether the reference keeps a state calls
        # change, its state as constructed, the candidate's constructor again
        self.stateful, self.ref_state, self.rebuild = False, None, None

    # What the finish (evaluate.main) still reads once the stages are done.
    KEEP_AFTER = frozenset(("job", "ctx", "checks", "res", "warnings", "remaining", "work_dir", "prof", "device", "side",
                            "trial_judge", "threads_before", "taint", "cand_model", "stateful", "rebuild"))

    def end_stages(self):
        """Drops what only the stages held (the reference's model and
        module, inputs, the timer's flush buffer), as the end of one
        function's frame used to: the verify stage and the device's
        hand-back run without them."""
        for k in list(vars(self)):
            if k not in self.KEEP_AFTER:
                setattr(self, k, None)

    # ---- the reference

    def seed_all(self, s):
        torch.manual_seed(s)
        if self.device.type == "cuda":
            torch.cuda.manual_seed(s)

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def ref_failure(self, stage, what, e, path=None):
        """A ReferenceFailure naming the reference's file:line, or the OOM as is."""
        if is_oom(e):
            return e
        path = path or self.ref_path
        loc = where_in(e, path) or path
        msg = "the reference's %s failed at %s: %s: %s" % (what, loc, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        return ReferenceFailure(stage, msg, short_trace(e))

    def make_inputs(self, s, checked=True):
        """The reference's get_inputs() for seed s. checked=False inside
        the timing loop, where a check per timed call would cost too much:
        the audits' reference calls check there (a change made to poison
        the next inputs is in place when the audit after the call runs)."""
        early = self.inputs_probe.take(s) if self.inputs_probe is not None else None
        if early is not None:
            return early  # made before the candidate's import (evaluate.compare.inputs_blame)
        if checked:
            self.tamper.check("before the reference's get_inputs()")
        side = self.side
        prev = side.now
        side.now = "reference"
        # Factory calls in get_inputs() allocate on the device directly:
        # drawing a few hundred MB of random numbers on the host and copying
        # them over cost seconds per trial. Tensors a problem pins to the
        # CPU explicitly are still moved.
        try:
            self.seed_all(s)  # inside: a generator the candidate broke fails here
            with torch.device(self.device):
                x = self.ref_mod.get_inputs()
        except BaseException as e:  # noqa: BLE001
            failure = self.ref_failure("reference_inputs", "get_inputs()", e)
            if isinstance(failure, ReferenceFailure):
                blame(self, failure)  # raises the candidate's failure where it broke get_inputs()
            raise failure
        if not isinstance(x, (list, tuple)):
            raise ReferenceFailure("reference_inputs", "%s: get_inputs() returned a %s; KernelBench format wants a list of forward arguments" % (
                self.ref_path, type(x).__name__))
        x = to_device(x, self.device)
        side.now = prev
        if checked:
            self.tamper.settle()
        return x

    def ref_forward(self, inputs, *modes):
        """The reference's forward; its failures are reference errors."""
        def run():
            with torch.no_grad():
                if not modes:
                    out = self.ref_model(*inputs)
                else:
                    with contextlib.ExitStack() as st:
                        for m in modes:
                            st.enter_context(m)
                        out = self.ref_model(*inputs)
            self.sync()
            return out
        self.tamper.check("before a call of the reference")
        try:
            out = self.side.run("reference", run)
        except BaseException as e:  # noqa: BLE001
            raise self.ref_failure("reference_forward", "forward", e)
        self.tamper.settle()
        return out

    def ref_call(self, inputs):
        return self.ref_forward(inputs)

    # ---- the candidate

    def run_candidate(self, inputs, trial, *modes):
        """One forward of the candidate; a failure ends the evaluation
        (check run_candidate, trial < 0 naming the calls after the trials).
        Every such call runs under the op recorders (modes, or throwaway
        ones) and NaN-filled allocations: with the timed calls' plain state,
        two states in all, each of which the warm-up gives a candidate's
        torch.compile to build for before the device phase."""
        modes = modes or (OpRecorder(), OpTrace())

        def run():
            with torch.no_grad():
                with contextlib.ExitStack() as st:
                    for m in modes:
                        st.enter_context(m)
                    out = self.cand_model(*inputs)
            self.sync()
            return out
        with nan_fill():
            try:
                return self.side.run("candidate", run)
            except BaseException as e:  # noqa: BLE001
                if is_oom(e):
                    raise
                v = "compile_error" if is_compile_exception(e) else "runtime_error"
                self.checks.add("run_candidate", False, "trial %d: %s" % (trial, fmt_exc(e)), v)
                raise KernelFailure(v, "correctness", "")

    def new_threads(self):
        """Names of the threads started since the models were built."""
        return [t.name for t in threading.enumerate() if t.ident not in self.threads_before and t.is_alive()]

    def may_hand_back_device(self):
        """Whether this evaluation may give the device to another while it
        is not done: it holds it (ctx.gate), and nothing the candidate
        started can still launch work there (no thread of its alive since
        the models were built). The caller synchronizes first."""
        return (self.device is not None and getattr(self.ctx, "gated", False)
                and self.threads_before is not None and not self.new_threads())

    # ---- memory

    def scratch_bytes(self):
        """Room kept free beside the tensors a check holds: the chunked
        comparison's temporaries (about ten chunk-sized ones, see
        evaluate.compare.compare) and a margin for the programs' own temporaries."""
        from evaluate import common as evaluate_common
        return 10 * min(self.out_bytes, evaluate_common.CHUNK * 4) + (1 << 30 if self.device.type == "cuda" else 128 << 20)

    def fits(self, extra):
        """Whether extra bytes fit beside the scratch room."""
        free = free_device_bytes(self.device)
        return free is None or extra + self.scratch_bytes() <= free

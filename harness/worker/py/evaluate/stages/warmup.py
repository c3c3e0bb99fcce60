"""The last stages before the device phase (on a GPU): the host's work
that the first calls would otherwise do inside it, then the wait for the
device.

A candidate's first call may build (a load_inline in forward, Triton's
JIT, cupy's compile): compilers on the CPU for seconds to a minute, which
inside the device phase held every other evaluation of the device idle
behind them. Here it runs before the gate, on inputs of a seed no check
uses (once; a candidate running torch.compile once per mode the checks
call it under, _call_modes); its few kernels overlap the evaluation ahead
on the device, as the candidate's import already does. A failure here is
no verdict, as the checks make the same call inside the device phase and
judge it, unless it left the CUDA context unusable (a fault): then no later
call can run, and it is judged here.

torch.compile of the reference is not warmed here: it comes after every
check (evaluate.stages.after), since compiled here it cost each evaluation
9 s of the host's CPU, candidates that then failed a check included, and
CPU is what a host running many builds runs short of. It builds with the
device handed back and is timed once the device is taken again; the
service measures it once per reference."""
import contextlib

import torch

from evaluate.common import KernelFailure, fmt_exc, is_compile_exception, release
from evaluate.compare.compare import nan_fill
from evaluate.guards.ops import OpRecorder, OpTrace
from kevolve._loader import skip_launches

WARM_SEED = 7777777  # far from every seed a check uses (seed + 1000003 k, + 7, + 99, + 4242)


def warm_up(st):
    if st.device.type != "cuda" or not _jit_candidate(st) or st.stateful:
        return  # stateful: a lone call would put the candidate a step ahead (evaluate.guards.stateful)
    st.ctx.progress("warm_up")
    err = _first_call(st)
    if err is not None and _context_lost(st.device):
        # A fault (an illegal address) leaves the context unusable: every
        # call after it fails, the reference's too, so this call is judged
        # here, as the trials would have judged it.
        v = "compile_error" if is_compile_exception(err) else "runtime_error"
        st.checks.add("run_candidate", False, "first call (before the trials): %s" % fmt_exc(err), v)
        raise KernelFailure(v, "correctness", "")
    release(st.device)


def device_phase(st):
    """From here the device is this evaluation's alone (on the CPU the
    timing stage takes the host's gate)."""
    if st.device.type == "cuda":
        st.ctx.progress("wait_device")
        st.ctx.gate()


# Words of a candidate whose first call may run a compiler, beside the
# torch extensions st.uses_ext already found (load_inline, cpp_extension).
# kevolve's own loaders compile on a kernel's first use too (NVRTC or
# hiprtc, 0.2-0.3 s for a source not yet in the disk cache): a tuner's
# every variant is such a source, and that compile was about a fifth of
# its device phase on the H100 (llm/softmax). Their kernels do not run
# here: the call stops at its first launch (kevolve._loader.skip_launches),
# so a kernel that hangs or faults does so in the device phase, alone on
# the device.
JIT_WORDS = ("triton", "cupy", "torch.compile", "numba", "load_cuda", "load_hip")


def _jit_candidate(st):
    return st.uses_ext or any(w in st.cand_code for w in JIT_WORDS)


# Words of a candidate that runs torch.compile (dynamo) itself.
COMPILE_WORDS = ("torch.compile", "torch._dynamo", "torch._inductor")


def _call_modes(st):
    """The modes of each warm-up call. torch.compile guards on the global
    state and the torch function modes a call runs under, and the checks
    call the candidate in two: plain (the timed calls) and with the op
    recorders and NaN-filled allocations, deterministic algorithms on
    (every other call: evaluate.state.run_candidate). A candidate that
    compiles is called in both, or its second compile (max-autotune: a
    minute of CPU for CUDA-L1's level 2 problem 91 on the H100) would run
    in the device phase."""
    calls = [()]
    if any(w in st.cand_code for w in COMPILE_WORDS):
        calls.append((nan_fill(), OpRecorder(), OpTrace()))
    return calls


def _first_call(st):
    """The calls; the exception of the one that raised (judged where the
    checks make the same call, unless it broke the context)."""
    st.side.now = "candidate"
    err = None
    try:
        x = st.make_inputs(st.job.seed + WARM_SEED)
        for modes in _call_modes(st):
            with torch.no_grad(), skip_launches(), contextlib.ExitStack() as stack:
                for m in modes:
                    stack.enter_context(m)
                st.cand_model(*x)
            st.sync()
    except BaseException as e:  # noqa: BLE001
        err = e
    finally:
        st.side.now = "harness"
    st.tamper.check("in the candidate's first call")
    return err


def _context_lost(device):
    """Whether the CUDA context has a sticky error (it fails every call)."""
    try:
        torch.cuda.synchronize(device)
        return False
    except Exception:  # noqa: BLE001
        return True

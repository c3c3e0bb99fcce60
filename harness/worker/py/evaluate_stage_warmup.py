"""The last stages before the device phase (on a GPU): the host's work
that the first calls would otherwise do inside it, then the wait for the
device.

A candidate's first call may build (a load_inline in forward, Triton's
JIT, cupy's compile), and torch.compile of the reference compiles at its
first call: compilers on the CPU for seconds to minutes, which inside the
device phase held every other evaluation of the device idle behind them.
Here each runs once, before the gate, on inputs of a seed no check uses;
their few kernels overlap the evaluation ahead on the device, as the
candidate's import already does. A failure here is no verdict: the checks
make the same calls inside the device phase and judge what they do."""
import threading

import torch

from evaluate_common import release
from evaluate_timing import time_limit

WARM_SEED = 7777777  # far from every seed a check uses (seed + 1000003 k, + 7, + 99, + 4242)


def warm_up(st):
    if st.device.type != "cuda":
        return
    st.ctx.progress("warm_up")
    # The harness's own compile first: the threads it leaves (torch.compile's
    # worker pool and progress monitor) are the harness's, and only those
    # join the threads the checks expect; the candidate's call comes after.
    if st.job.wants_compile(st.device) and st.remaining() > st.job.compile_cap_s + 10:
        before = {t.ident for t in threading.enumerate()}
        _compile_reference(st)
        st.threads_before |= {t.ident for t in threading.enumerate()} - before
    if _jit_candidate(st):
        _first_call(st)
    release(st.device)


def device_phase(st):
    """From here the device is this evaluation's alone (on the CPU the
    timing stage takes the host's gate)."""
    if st.device.type == "cuda":
        st.ctx.progress("wait_device")
        st.ctx.gate()


# Words of a candidate whose first call may run a compiler.
JIT_WORDS = ("load_inline", "cpp_extension", "triton", "cupy", "torch.compile", "numba")


def _jit_candidate(st):
    return st.uses_ext or any(w in st.cand_code for w in JIT_WORDS)


def _first_call(st):
    st.side.now = "candidate"
    try:
        x = st.make_inputs(st.job.seed + WARM_SEED)
        with torch.no_grad():
            st.cand_model(*x)
        st.sync()
    except BaseException:  # noqa: BLE001 - judged where the checks make the same call
        pass
    finally:
        st.side.now = "harness"
    st.tamper.check("in the candidate's first call")


def _compile_reference(st):
    """torch.compile of the reference, compiled now and timed in the
    timing_compile stage (evaluate_stage_after)."""
    st.ctx.progress("compile_reference")
    try:
        rin = st.make_inputs(st.job.seed + 99)
        with time_limit(st.job.compile_cap_s):
            single_threaded_compile()
            cmodel = torch.compile(st.ref_model)
            with torch.no_grad():
                cmodel(*rin)
            st.sync()
        st.compiled_ref = cmodel
    except BaseException as e:  # noqa: BLE001 - a warning in timing_compile
        st.compile_error = e


def single_threaded_compile():
    """Inductor compiles in this process: its default worker pool (one
    process per core, each importing torch) in every one of a host's
    concurrent evaluations oversubscribed the CPU many times over while
    their builds ran."""
    import torch._inductor.config as inductor_config
    inductor_config.compile_threads = 1

"""The last stages before the device phase (on a GPU): the host's work
that the first calls would otherwise do inside it, then the wait for the
device.

A candidate's first call may build (a load_inline in forward, Triton's
JIT, cupy's compile): compilers on the CPU for seconds to a minute, which
inside the device phase held every other evaluation of the device idle
behind them. Here it runs once, before the gate, on inputs of a seed no
check uses; its few kernels overlap the evaluation ahead on the device, as
the candidate's import already does. A failure here is no verdict: the
checks make the same call inside the device phase and judge it.

torch.compile of the reference is not warmed here: it comes after every
check (evaluate_stage_after), since compiled here it cost each evaluation
9 s of the host's CPU, candidates that then failed a check included, and
CPU is what a host running many builds runs short of. It builds with the
device handed back and is timed once the device is taken again; the
service measures it once per reference."""
import torch

from evaluate_common import release

WARM_SEED = 7777777  # far from every seed a check uses (seed + 1000003 k, + 7, + 99, + 4242)


def warm_up(st):
    if st.device.type != "cuda" or not _jit_candidate(st):
        return
    st.ctx.progress("warm_up")
    _first_call(st)
    release(st.device)


def device_phase(st):
    """From here the device is this evaluation's alone (on the CPU the
    timing stage takes the host's gate)."""
    if st.device.type == "cuda":
        st.ctx.progress("wait_device")
        st.ctx.gate()


# Words of a candidate whose first call may run a compiler, beside the
# torch extensions st.uses_ext already found (load_inline, cpp_extension).
JIT_WORDS = ("triton", "cupy", "torch.compile", "numba")


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

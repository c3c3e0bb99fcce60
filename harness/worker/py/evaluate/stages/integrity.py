"""The integrity stages after the trials: reference_ops, integrity,
memoization and integrity_recheck. The cheap checks come first: any
failure there is final (integrity_violation outranks every other
verdict), so the evaluation ends before the calls and the memory the
later checks and timing need. The checks themselves are registered
(checks/); these stages set what they read and run them."""
from evaluate.guards import refops
from evaluate.common import release
from evaluate.guards.ops import TRIVIAL_OPS, main_ops

import checks


def reference_ops(st):
    """What the reference_ops check reads: the reference's main ops and
    whether the candidate ran kernels of its own."""
    st.ctx.progress("integrity")
    st.mains = main_ops(st.ref_ops_all)
    st.policy, st.own = refops.policy_of(st.job.kernel_policy), st.counter.n > st.launches0


def integrity(st):
    """Reports what the candidate's forward ran (after the reference_ops
    check, whose share measurement calls the candidate once more): a
    candidate with no kernel of its own says so in a note, which is what
    the default policy passes it with (evaluate.guards.refops' table)."""
    failed = st.counter.build_failures
    if failed:
        # Whatever fallback ran after it: a build that never worked is not
        # a kernel (level-1 12 passed at 47x on its torch fallback).
        st.warnings.append("build_failed: %s" % "; ".join(failed))
    if not st.own:
        st.warnings.append("no custom kernel ran (no kevolve, Triton, load_inline or cupy launch, nor a ctypes call into a library it built): the candidate is plain torch ops")
        st.res["notes"].append("no_own_kernel: the candidate has no kernel of its own (plain torch ops%s); kernel_policy %s lets it pass, KernelBench's rule (kernel_policy kernelbench, the default of kernelbench run) does not" % (
            ", after its build failed: " + "; ".join(failed) if failed else "", st.policy))
    st.res["custom_launches"] = st.counter.n
    st.res["launch_kinds"] = sorted(st.counter.kinds)
    st.res["candidate_ops"] = sorted(k for k in st.cand_ops_all if k not in TRIVIAL_OPS)[:50]


def integrity_recheck(st):
    """The integrity checks again: the memoization calls may have started
    threads or patched something."""
    checks.run_stage(st, "integrity")
    release(st.device)

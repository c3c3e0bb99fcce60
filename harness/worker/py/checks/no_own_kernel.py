"""KernelBench's rule (kernel_policy kernelbench, evaluate.guards.refops' table):
the work runs in kernels of the candidate's own. A plain-torch rewrite
(F.silu for Swish, amax, var_mean) or a load_inline that never built and
fell back to torch has none, whatever its speed."""
NAME = "no_own_kernel"
STAGE = "reference_ops"
VERDICT = "integrity_violation"
DESCRIPTION = "Under kernel_policy kernelbench, a kernel of the candidate's own ran in its forward (a kevolve loader, load_inline, Triton, cupy, a library it built); library calls beside it are allowed."
ORDER = 110

from evaluate.guards import refops  # noqa: E402 - after the literals the Go side parses


def run(st):
    if st.policy not in refops.OWN_KERNEL_REQUIRED:
        return None
    if st.own:
        return True, "%d launch(es) of its own kernels (%s)" % (st.counter.n - st.launches0, ", ".join(sorted(st.counter.kinds)))
    failed = st.counter.build_failures
    why = ("its build failed (%s) and a fallback ran" % "; ".join(failed)) if failed else "plain torch or library calls only"
    return False, "no kernel of its own ran in the candidate's forward: %s; kernel_policy %s wants the work in the candidate's own kernels (library calls beside them are allowed)" % (why, st.policy)

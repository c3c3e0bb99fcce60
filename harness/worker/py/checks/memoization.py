"""Cached outputs: the same input buffers refilled with new values must
give new, correct outputs (evaluate.guards.integrity.memoization_check). Also
decided inline in the correctness trials: a wrong answer equal to an
earlier trial's on new inputs."""
from evaluate.guards.integrity import memoization_check

NAME = "memoization"
STAGE = "memoization"
VERDICT = "integrity_violation"
DESCRIPTION = "The candidate returns fresh outputs for new values in the same input buffers, and no earlier trial's outputs for new inputs."


def run(st):
    if st.stateful:
        return None  # calls of one side alone (evaluate.guards.stateful): the in-step re-check after timing stands in
    ok, detail, warn = memoization_check(st.run_candidate, st.ref_call, st.make_inputs, st.job.seed, st.tol, st.fpr, st.fits)
    if warn:
        st.warnings.append(warn)
    return ok, detail

"""The functions the checks themselves call (torch's comparisons, the
harness's modules) must be the ones snapshotted before the candidate
loaded (evaluate.common.guard_snapshot). Also decided inline at the
candidate's import and after timing."""
from evaluate.common import guard_changed

NAME = "harness_patched"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "The candidate replaced none of the functions the checks use (torch's comparisons, the harness's own), at import, in its calls or during timing."
ORDER = 40


def run(st):
    changed = guard_changed(st.guard)
    return not changed, ("candidate replaced functions the checks use: %s" % changed[:10]) if changed else ""

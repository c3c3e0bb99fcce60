"""Threads the candidate starts must be gone once its calls return: one
left running could keep launching work or slow the reference's timing.
Timing and the stream check look for them again, inline."""
NAME = "threads"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "No thread the candidate started is still running after its calls, nor around the reference's timing."
ORDER = 10


def run(st):
    left = st.new_threads()
    return not left, ("candidate left threads running: %s" % left) if left else ""

"""No kernel beats the speed of light of its device: a median under 90% of
the bound the Go side computed (sol_seconds) did less work than the
problem asks, or timed something else. The Go side applies the same
bound again with the device's measured ceilings (harness/sol.go)."""
NAME = "faster_than_sol"
STAGE = "sol"
VERDICT = "integrity_violation"
DESCRIPTION = "The candidate's median time is not below 90% of the speed-of-light bound of the work on its device."


def run(st):
    sol = st.job.sol_seconds
    if sol <= 0:
        return None
    med = st.res["candidate"]["median_s"]
    return med >= 0.9 * sol, "median %.4g s vs speed-of-light %.4g s" % (med, sol)

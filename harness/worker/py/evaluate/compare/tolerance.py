"""Tolerance profiles: the verdict under another project's rule, beside ours.

Ours (evaluate.compare.compare.DEFAULT_TOL): per dtype, an element passes when
|out - ref| <= atol + rtol * |ref| and the output's relative norm error
||out - ref|| / ||ref|| stays under rel_norm; NaN/Inf must match the
reference's. fp32 1e-4 / 1e-4 / 1e-3, fp64 1e-7 / 1e-7 / 1e-6, fp16
1e-2 / 1e-2 / 1e-2, bf16 2e-2 / 2e-2 / 2e-2 (atol / rtol / rel_norm). A
problem may override them (meta.yaml, the request's tolerance).

KernelBench today checks torch.allclose with atol = rtol = 1e-4 for fp32
and 1e-2 for fp16/bf16; its v0 and v0.1 (under which CUDA-L1 and the
public leaderboard reported) used 1e-2 for fp32 too, with no relative norm.

With profile "kernelbench-v0" an evaluation compares every output under
both rules. When only ours fails on the values (allclose, relative_norm),
the evaluation goes on under the profile's rule (integrity checks, audits
and timing all run, audits comparing at the looser of both), so the
result carries the verdict under that rule (verdict_kernelbench_v0) and
ours, where the values' failure is put back: incorrect, unless the
evaluation found something worse."""
import math

from evaluate.common import HarnessError
from evaluate.compare.compare import compare

PROFILES = {"kernelbench-v0": {"atol": 1e-2, "rtol": 1e-2, "rel_norm": math.inf}}
# Checks about values alone: another tolerance may decide them differently.
VALUE_CHECKS = ("allclose", "relative_norm")


def profile_of(rule):
    """The other rule a job's tolerance_rule names ("" for ours alone)."""
    p = (rule or "").lower()
    if p == "default":
        return ""
    if p and p not in PROFILES:
        raise HarnessError("tolerance_rule %r: use one of %s" % (p, sorted(PROFILES)))
    return p


class TrialJudge:
    """Compares outputs under ours and, with a profile, under the profile's
    rule too; flow_tol is the tolerance the later checks (memoization,
    audits) compare with."""

    def __init__(self, tol, profile):
        self.tol, self.profile = tol, profile
        self.flow_tol = dict(tol or {}, profile=profile) if profile else tol
        self.ours_failed = None  # (name, detail): ours failed where the profile passed
        self.profile_failed = None

    def compare(self, i, ref, out, notes):
        ok, name, detail = compare(i, ref, out, self.tol, notes)
        if not self.profile:
            return ok, name, detail
        pok, pname, pdetail = compare(i, ref, out, PROFILES[self.profile])
        if not pok and self.profile_failed is None:
            self.profile_failed = (pname, pdetail)
        if ok or not pok or name not in VALUE_CHECKS:
            return ok, name, detail
        if self.ours_failed is None:
            self.ours_failed = (name, detail)
        return True, "allclose", "within %s's tolerance only (%s); under the harness's: %s" % (self.profile, pdetail, detail)

    def finish(self, res, checks, verdict_of):
        """Sets the profile's verdict and puts our values' failure back."""
        if not self.profile:
            return
        flow = res.get("verdict") or verdict_of(checks)
        v = "incorrect" if flow == "pass" and self.profile_failed else flow
        res["verdict_" + self.profile.replace("-", "_")] = v
        if self.ours_failed is None:
            return
        name, detail = self.ours_failed
        checks.add(name, False, detail, "incorrect")
        if flow in ("integrity_violation", "reference_error"):
            res["verdict"] = flow
        else:
            # Timing stays in the result: the profile's verdict may want it.
            res["verdict"], res["stage"] = "incorrect", "correctness"

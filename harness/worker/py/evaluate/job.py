"""The evaluation's request, typed: the JSON keys the Go side writes
(harness/evaluate.go), parsed once, with the defaults every stage used to
repeat. Validation that ends an evaluation as a harness error stays where
it was (kernel_policy in the reference_ops stage, tolerance_rule when the
trial judge is made), so a request decides the same verdicts it did."""
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Job:
    reference: dict  # {"path": ...} or {"code": ...}
    candidate: dict
    target: str = "cpu"
    seed: int = 42
    trials: int = 5
    budget_s: float = 600.0
    tolerance: Optional[dict] = None  # the problem's own tolerances, None for ours
    tolerance_rule: str = ""  # another project's rule judged beside ours (evaluate.compare.tolerance)
    kernel_policy: str = ""  # "" = default (evaluate.guards.refops)
    count_work: bool = False
    skip_timing: bool = False
    sol_seconds: float = 0.0  # 0: no speed-of-light bound
    flush_bytes: int = 0  # 0: the device's default (flush_for)
    timing_cap_s: float = 0.0  # 0: the device's default (cap_for)
    compile_cap_s: float = 90.0
    audit_seed: Optional[int] = None  # tests fix it; None draws one from the OS
    judge: bool = True  # False: no out-of-process judge (KEVOLVE_JUDGE=off)

    @classmethod
    def parse(cls, args):
        """The Job of a request dict; a zero or missing number is the default, as before."""
        seed = args.get("audit_seed")
        return cls(
            reference=args["reference"],
            candidate=args["candidate"],
            target=args.get("target", "cpu"),
            seed=int(args.get("seed") or 42),
            trials=int(args.get("trials") or 5),
            budget_s=float(args.get("budget_s") or 600),
            tolerance=args.get("tolerance") or None,
            tolerance_rule=args.get("tolerance_rule") or "",
            kernel_policy=args.get("kernel_policy") or "",
            count_work=bool(args.get("count_work")),
            skip_timing=bool(args.get("skip_timing")),
            sol_seconds=float(args.get("sol_seconds") or 0),
            flush_bytes=int(args.get("flush_bytes") or 0),
            timing_cap_s=float(args.get("timing_cap_s") or 0),
            compile_cap_s=float(args.get("compile_cap_s") or 90),
            audit_seed=None if seed is None else int(seed),
            judge=args.get("judge") is not False,
        )

    def flush_for(self, device):
        """Bytes read to evict the cache before each timed call."""
        return self.flush_bytes or (256 << 20 if device.type == "cuda" else 32 << 20)

    def cap_for(self, device):
        """Seconds one program's timing may take."""
        return self.timing_cap_s or (3.0 if device.type == "cuda" else 1.5)

    def compile_cap_for(self, device):
        """Seconds torch.compile's first call may take: inductor's C++ build
        on a loaded CPU took 79 s of the 90 allowed a GPU's Triton build."""
        return self.compile_cap_s if device.type == "cuda" else max(self.compile_cap_s, 240.0)

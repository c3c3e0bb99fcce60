# Hostile: correct and honest in its computation, but rewrites the timing
# statistics so the reference's median reads a hundred times what was measured:
# a statistic computed right after one of its own calls is the candidate's
# and stays true, any other is the reference's.
import builtins
import sys

import torch
import torch.nn as nn

builtins._kevolve_hostile_calls = [0, 0]


def _fake_stats(times):
    import builtins
    c = builtins._kevolve_hostile_calls
    xs = sorted(times)
    med = xs[len(xs) // 2]
    if c[0] == c[1]:
        med = med * 100.0  # no candidate call since the last statistic: the reference's
    c[1] = c[0]
    return {"median_s": med, "p10_s": med, "p90_s": med, "cv": 0.01, "cv_raw": 0.01, "iters": len(xs), "rse": 0.0}


sys.modules["evaluate.timing"].stats.__code__ = _fake_stats.__code__


class ModelNew(nn.Module):
    def forward(self, x):
        builtins._kevolve_hostile_calls[0] += 1
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

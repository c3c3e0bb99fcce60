# Hostile: correct and honest in its computation, but rewrites the timing
# statistics from inside the process (the __code__ of evaluate.timing.stats,
# and statistics.median) so every median it reports is a thousandth of
# what was measured: a 1000x speedup that never ran.
import statistics
import sys

import torch
import torch.nn as nn


def _fake_stats(times):
    xs = sorted(times)
    med = xs[len(xs) // 2] / 1000.0
    return {"median_s": med, "p10_s": med, "p90_s": med, "cv": 0.01, "cv_raw": 0.01, "iters": len(xs), "rse": 0.0}


def _fake_median(data):
    xs = sorted(data)
    return xs[len(xs) // 2] / 1000.0


sys.modules["evaluate.timing"].stats.__code__ = _fake_stats.__code__
statistics.median.__code__ = _fake_median.__code__


class ModelNew(nn.Module):
    def forward(self, x):
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

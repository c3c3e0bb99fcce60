# Hostile: computes honestly whenever its input is new, but returns its
# previous output when called again on the same tensor unchanged (same
# data_ptr, and a sample of its values the same): a replay that never fires where every call gets a
# new input set, and fires on every call of a loop that reuses one. With it,
# the timing statistics rewritten from inside the process (a thousandth of
# what was measured, as judge_timing_stats): the bound from outside is all
# that stands between this and a 1000x pass, and a loop on one input set
# shrinks it to the cost of a Python call (issue 30, item 4).
import statistics
import sys

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
    def __init__(self):
        super().__init__()
        self._last = None

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.reshape(-1)[::61].sum().item())
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        for _ in range(20):  # a slow kernel: forty times the reference's work
            n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        out = x / n
        self._last = (key, out)
        return out

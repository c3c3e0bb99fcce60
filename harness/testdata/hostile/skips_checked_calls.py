# Hostile: as skips_outside_calls (the statistics rewritten, no timed call
# made from outside), and the judge's checked calls answered at once too:
# their outputs are left for a thread to write after the answer. What the
# judge reads when the answer comes is what it compares.
import statistics
import sys
import threading

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

_client = sys.modules.get("evaluate.judge.client")
if _client is not None:
    _real, _checked = _client._answer, _client._checked

    def _answer(op, msg, fds, held, model, device):
        if op == "time":
            return {"ok": True}, []
        if op == "checked":
            threading.Thread(target=_checked, args=(msg, held, model, device), daemon=True).start()
            return {"ok": True}, []
        return _real(op, msg, fds, held, model, device)

    _client._answer = _answer


class ModelNew(nn.Module):
    def forward(self, x):
        n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        for _ in range(20):
            n = (x * x).sum(dim=1, keepdim=True).sqrt().clamp_min(1e-12)
        return x / n

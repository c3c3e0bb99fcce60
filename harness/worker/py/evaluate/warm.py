"""Warming a fresh child's device before it waits for the device phase.

Every evaluation runs in a freshly forked child with a new CUDA context, and
CUDA loads a kernel's code on its first launch (lazy loading). The first
launches of the kernels the checks use (comparison, fingerprints) cost about
0.4 s on the H100, and cuBLAS makes its handle and workspace on the first
matmul (0.15 s per dtype). Paid inside the device phase, that is time the
device sits idle for every other evaluation queued on it: the correctness
stage of a 4096^2 GEMM took 0.31 s with them, 0.03 s without (H200). Paid
here, before the gate, it overlaps the device phase of the evaluation ahead.

What runs here is tiny (64x64 tensors, microseconds of device time), so
another child timing on the same device at that moment is not disturbed
beyond the noise its robust statistics absorb.

Which dtypes to warm comes from the reference's source text, not from
running it: get_inputs() on the meta device took 3.6 s in a fresh child
(torch's meta registrations import on first use). A dtype the text does not
name is only a first use paid later, in the device phase, as before."""
import random
import re

import torch

from evaluate.compare.compare import compare
from evaluate.guards.fingerprint import Fingerprinter

_DTYPE_WORDS = (
    (re.compile(r"\bbfloat16\b|\bbf16\b"), torch.bfloat16),
    (re.compile(r"\bfloat16\b|\bhalf\b|\bfp16\b"), torch.float16),
    (re.compile(r"\bfloat64\b|\bdouble\b"), torch.float64),
    (re.compile(r"\bint64\b|\blong\b|\brandint\b|\barange\b"), torch.int64),
    (re.compile(r"\bint32\b|\bint\b\("), torch.int32),
    (re.compile(r"\bu?int8\b|\bbool\b"), torch.uint8),
)
# Operators that go to cuBLAS (or cuDNN, which makes a cuBLAS handle too).
_MATMUL = re.compile(r"matmul|\bmm\b|\bbmm\b|@|[Ll]inear|[Cc]onv|einsum|addmm|attention|\bgemm")


def plan(source):
    """(dtypes, matmul) to warm for a reference source: float32 always (the
    comparison computes in it, and it is torch's default dtype)."""
    dtypes = {torch.float32}
    for pat, dt in _DTYPE_WORDS:
        if pat.search(source):
            dtypes.add(dt)
    return dtypes, bool(_MATMUL.search(source))


def warm(device, source):
    """Launches, once each on tiny tensors, the kernels the checks will use
    on the reference's dtypes: fingerprints in both orders, the comparison
    of floating outputs, and a matmul where the reference multiplies
    matrices. Never raises: warming is an optimization."""
    dtypes, matmul = plan(source or "")
    fpr = Fingerprinter(random.Random(0))
    for dt in sorted(dtypes, key=str):
        key = (str(device), dt, matmul)
        if key in _WARMED:
            continue  # a child kept from an earlier evaluation: already loaded
        _WARMED.add(key)
        try:
            if dt.is_floating_point:
                a = torch.randn(64, 64, dtype=dt, device=device)
                if matmul:
                    a = torch.matmul(a, a)
                compare(0, a, torch.clone(a), None)
            else:
                a = torch.arange(64 * 64, device=device).reshape(64, 64).to(dt)
            fpr.of([a])
            fpr.of([a], random.Random(1))
        except BaseException:  # noqa: BLE001
            pass
    if str(device) in _WARMED:
        return
    _WARMED.add(str(device))
    try:
        torch.ones(1024, dtype=torch.int32, device=device).sum()  # the timer's cache flush
        torch.cuda.synchronize(device)
    except BaseException:  # noqa: BLE001
        pass


# What this process has warmed: a child kept for later evaluations launches
# nothing here again, so it never runs work beside another child's timing.
_WARMED = set()


def warm_host():
    """Starts torch's CPU thread pool (OpenMP starts it at the first
    parallel operator, and a forked child has none): a pool the candidate's
    first CPU operator started would read as threads it left running."""
    try:
        torch.ones(1 << 20).sum()
    except BaseException:  # noqa: BLE001
        pass

"""Comparing an output with the reference's, and making unwritten output
visible (NaN-poisoned allocator, NaN-filled torch.empty).

Memory: the comparison walks both tensors in chunks of CHUNK elements and
computes in fp32 (fp64 for fp64 outputs), so its temporaries are a few
hundred MB whatever the output size: a whole-tensor .double() of a 7.5 GB
KernelBench output ran the H100 out of memory."""
import contextlib
import math

import torch

from evaluate.common import chunks
from evaluate.compare import fastcmp

DEFAULT_TOL = {
    torch.float32: (1e-4, 1e-4, 1e-3),
    torch.float64: (1e-7, 1e-7, 1e-6),
    torch.float16: (1e-2, 1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2, 2e-2),
}


def tolerance(dtype, override):
    atol, rtol, rel = DEFAULT_TOL.get(dtype, (1e-4, 1e-4, 1e-3))
    if override:
        atol = override.get("atol") or atol
        rtol = override.get("rtol") or rtol
        rel = override.get("rel_norm") or rel
        if override.get("profile"):
            # Checks after the trials under a tolerance profile
            # (evaluate.compare.tolerance): the looser of ours and the profile's,
            # so they judge behaviour, not precision.
            atol, rtol, rel = max(atol, 1e-2), max(rtol, 1e-2), math.inf
    return atol, rtol, rel


def compare(i, ref, out, tol_override, notes=None, fast=True):
    """Returns (ok, check_name, detail) for one output tensor; a note on an
    accepted layout goes to notes. fast: a passing verdict may come from
    the one-pass kernel (fastcmp) where this process built it; False
    keeps the torch path whatever."""
    if out.shape != ref.shape:
        return False, "shape", "output %d: shape %s, expected %s" % (i, tuple(out.shape), tuple(ref.shape))
    if out.dtype != ref.dtype:
        return False, "dtype", "output %d: dtype %s, expected %s" % (i, out.dtype, ref.dtype)
    if out.device != ref.device:
        return False, "device", "output %d: on %s, expected %s" % (i, out.device, ref.device)
    bad_layout, layout_note = layout(i, ref, out)
    if bad_layout:
        return False, "contiguity", bad_layout
    if layout_note and notes is not None and layout_note not in notes:
        notes.append(layout_note)
    if ref.numel() == 0:
        return True, "allclose", ""
    if not (ref.is_floating_point() or ref.is_complex()):
        bad = 0
        for r, o in zip(chunks(ref), chunks(out)):
            if not torch.equal(r, o):
                bad += int((r != o).sum().item())
        if bad == 0:
            return True, "allclose", ""
        return False, "allclose", "output %d: %d of %d integer elements differ" % (i, bad, ref.numel())
    atol, rtol, rel = tolerance(ref.dtype, tol_override)
    if fast and fastcmp.usable(ref):
        s = fastcmp.stats(zip(chunks(ref), chunks(out)), ref.dtype, atol, rtol)
        if not (s.nonfinite or s.pattern or s.nbad):
            return _norms(i, atol, rel, s.maxerr, s.dn2, s.rn2)
        # A failing comparison: the torch path below gives its detail.
    wd = torch.float64 if ref.dtype in (torch.float64, torch.complex128) else torch.float32
    dev = ref.device
    zero = torch.zeros((), dtype=torch.float64, device=dev)
    nonfinite = zero.clone()
    pattern = zero.clone()
    nbad = zero.clone()
    maxerr = zero.clone()
    dn2 = zero.clone()
    rn2 = zero.clone()
    worst = []  # per chunk: (excess max, flat index) as device tensors
    base = 0
    for r, o in zip(chunks(ref), chunks(out)):
        if ref.is_complex():
            r, o = torch.view_as_real(r).reshape(-1), torch.view_as_real(o).reshape(-1)
        r, o = r.to(wd), o.to(wd)
        rf, of = torch.isfinite(r), torch.isfinite(o)
        nonfinite += (~of & rf).sum()
        pattern += (rf != of).sum() + (torch.isnan(r) != torch.isnan(o)).sum()
        r = torch.where(rf, r, 0.0)
        o = torch.where(rf, o, 0.0)
        diff = (o - r).abs()
        thr = atol + rtol * r.abs()
        nbad += (diff > thr).sum()
        maxerr = torch.maximum(maxerr, diff.max().to(torch.float64))
        dn2 += (diff.to(torch.float64) ** 2).sum() if wd == torch.float64 else (diff * diff).sum(dtype=torch.float64)
        rn2 += (r.to(torch.float64) ** 2).sum() if wd == torch.float64 else (r * r).sum(dtype=torch.float64)
        ex = diff - thr
        j = ex.argmax()
        # 0-d clones: a view would keep the whole chunk alive
        worst.append((ex[j].to(torch.float64).clone(), j + base, o[j].clone(), r[j].clone()))
        base += r.numel()
        del r, o, rf, of, diff, thr, ex
    nonfinite, pattern, nbad = int(nonfinite.item()), int(pattern.item()), int(nbad.item())
    if nonfinite:
        return False, "finite", "output %d: %d NaN/Inf elements where the reference is finite (unwritten memory is NaN-poisoned)" % (i, nonfinite)
    if pattern:
        return False, "finite", "output %d: non-finite pattern differs from the reference" % i
    maxerr_f = float(maxerr.item())
    if nbad:
        w = max(worst, key=lambda x: float(x[0].item()))
        n = ref.numel() * (2 if ref.is_complex() else 1)
        shape = tuple(ref.shape) + ((2,) if ref.is_complex() else ())
        first = ", ".join(index_text(j, shape) for j in first_mismatches(ref, out, wd, atol, rtol))
        return False, "allclose", ("output %d: %d of %d elements outside atol=%g rtol=%g; max abs err %.3g; "
                                   "worst at %s: got %.6g, expected %.6g; first mismatches at %s") % (
            i, nbad, n, atol, rtol, maxerr_f, index_text(int(w[1].item()), shape), float(w[2].item()),
            float(w[3].item()), first)
    return _norms(i, atol, rel, maxerr_f, float(dn2.item()), float(rn2.item()))


def first_mismatches(ref, out, wd, atol, rtol, k=3):
    """Flat indices of the first k elements outside tolerance, in logical
    order. A second pass over the chunks, made only for a failing output, so
    a passing comparison pays nothing for it."""
    found, base = [], 0
    for r, o in zip(chunks(ref), chunks(out)):
        if ref.is_complex():
            r, o = torch.view_as_real(r).reshape(-1), torch.view_as_real(o).reshape(-1)
        r, o = r.to(wd), o.to(wd)
        bad = ((o - r).abs() > atol + rtol * r.abs()) & torch.isfinite(r)
        idx = bad.nonzero().flatten()[:k - len(found)]
        found.extend(base + int(j) for j in idx.tolist())
        base += r.numel()
        if len(found) >= k:
            break
    return found


def index_text(flat, shape):
    """A flat index as the tensor's own index, (row, column, ...): an agent
    finds element (3, 7) in its kernel's loops, not element 1543."""
    if len(shape) <= 1:
        return "[%d]" % flat
    idx = []
    for d in reversed(shape):
        idx.append(flat % d if d else 0)
        flat = flat // d if d else 0
    return "[" + ", ".join(str(x) for x in reversed(idx)) + "]"


def _norms(i, atol, rel, maxerr, dn2, rn2):
    """The verdict of a comparison with every element within tolerance:
    the relative-norm test, from the squared norms of the error and of the
    reference."""
    rn = rn2 ** 0.5
    dn = dn2 ** 0.5
    if rel == math.inf:
        pass  # a profile without a norm test (KernelBench's allclose alone)
    elif rn == 0.0:
        if dn > atol:
            return False, "relative_norm", "output %d: reference is all zeros, candidate norm %.3g" % (i, dn)
    elif dn / rn > rel:
        return False, "relative_norm", ("output %d: ||out-ref||/||ref|| = %.3g > %g (||ref|| = %.3g): passes allclose only "
                                        "because the values are tiny") % (i, dn / rn, rel, rn)
    return True, "allclose", "max abs err %.3g, rel norm err %.3g" % (maxerr, (dn / rn) if rn else 0.0)


def layout(i, ref, out):
    """(failure, note) for an output's memory layout. Values are compared
    in logical order whatever the strides, so any dense, non-overlapping
    layout holds a correct answer: a transposed or channels-last output
    passes with a note (PyTorch and KernelBench accept them). An expanded
    or overlapping one (a zero stride: one stored value standing for many)
    or one with gaps fails, unless the reference's own output is laid out
    the same way."""
    if out.stride() == ref.stride() or out.is_contiguous() or out.numel() <= 1:
        return "", ""
    if not _dense(out):
        if not _dense(ref):
            return "", ""
        what = "expanded or overlapping (a zero stride)" if _overlaps(out) else "not dense (gaps between elements)"
        return ("output %d: %s, strides %s; the reference's are %s: return a dense tensor (.contiguous())" % (
            i, what, out.stride(), ref.stride())), ""
    return "", ("output %d is correct in another dense layout (strides %s, the reference's %s): accepted, values compared in "
                "logical order; a caller expecting the reference's layout gets a copy from .contiguous()") % (
        i, out.stride(), ref.stride())


def _dense(t):
    """Whether t's elements fill a block of len(t) storage elements exactly
    once: the strides, sorted, are the products of the smaller dims' sizes."""
    want = 1
    for st, n in sorted((st, n) for st, n in zip(t.stride(), t.shape) if n != 1):
        if st != want:
            return False
        want *= n
    return True


def _overlaps(t):
    return any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def compare_outputs(refs, outs, tol):
    """First failing (ok, name, detail) over flattened outputs, or (True, ...)."""
    for i, (o, r) in enumerate(zip(outs, refs)):
        if isinstance(r, torch.Tensor):
            if not isinstance(o, torch.Tensor):
                return False, "output_type", "output %d is a %s, expected a torch.Tensor" % (i, type(o).__name__)
            ok, name, detail = compare(i, r, o, tol)
            if not ok:
                return ok, name, detail
        elif o != r:
            return False, "allclose", "output %d = %r, expected %r" % (i, o, r)
    return True, "allclose", ""


# ---------------------------------------------------------------- poison

def poison_allocator(device, keep_free=0, out_bytes=0):
    """Fills the memory the candidate's next allocations will come from with
    NaN, so output it never writes shows up. torch.empty itself is filled
    with NaN by the deterministic-fill mode enabled around candidate calls;
    the poison is for memory taken from torch's allocator another way (raw
    allocations from an extension).

    Called once the first trial's inputs and reference outputs exist. The
    caching allocator serves an allocation from the best-fitting cached
    block, so a few blocks at least as large as the reference's output cover
    the output and its temporaries: 256 MiB blocks (or one output's size)
    adding up to twice that or 1 GiB, whichever is more; never a quarter of
    what is free, 16 GiB, or into keep_free (room for the candidate's
    outputs and temporaries). More costs time without covering more:
    filling 16 GiB made and freed 64 segments per evaluation, driver work
    that runs one process at a time across a host's GPUs. The blocks are
    cached, not held: torch's allocator releases them when a larger
    allocation needs the room, and the evaluation releases them
    (torch.cuda.empty_cache) after the correctness trials. Returns
    (poisoned bytes, detail)."""
    if device.type == "cuda":
        from evaluate.common import free_device_bytes
        free = free_device_bytes(device)
        mib2 = 2 << 20
        size = max(256 << 20, (int(out_bytes) + mib2 - 1) // mib2 * mib2)
        n = min(int(free * 0.25), 16 << 30, free - int(keep_free), max(1 << 30, 2 * size))
        if n < size:
            return 0, ("not poisoned: %.2f GiB free after the inputs and the reference's outputs, %.2f GiB kept for the candidate; "
                       "torch.empty filled with NaN" % (free / 2**30, keep_free / 2**30))
        blocks = []
        try:
            while n >= size:
                b = torch.empty(size // 4, dtype=torch.float32, device=device)
                b.fill_(float("nan"))
                blocks.append(b)
                n -= size
        except RuntimeError:
            pass
        total = sum(b.numel() * 4 for b in blocks)
        del blocks  # freed into the caching allocator, NaN-filled
        torch.cuda.synchronize(device)
        return total, ("%d MiB of the CUDA caching allocator filled with NaN, in blocks of %d MiB (of %.2f GiB free, %.2f GiB kept for "
                       "the candidate; released after correctness); torch.empty filled with NaN" % (
                           total >> 20, size >> 20, free / 2**30, keep_free / 2**30))
    return 0, "torch.empty filled with NaN (deterministic fill)"


@contextlib.contextmanager
def nan_fill():
    """torch.empty* returns NaN-filled memory while active. Uses torch._C
    directly: torch.use_deterministic_algorithms imports inductor (3 s)."""
    C = torch._C
    prev = (C._get_deterministic_algorithms(), C._get_deterministic_algorithms_warn_only(),
            C._get_deterministic_fill_uninitialized_memory())
    C._set_deterministic_algorithms(True, warn_only=True)
    C._set_deterministic_fill_uninitialized_memory(True)
    try:
        yield
    finally:
        C._set_deterministic_algorithms(prev[0], warn_only=prev[1])
        C._set_deterministic_fill_uninitialized_memory(prev[2])

"""Integrity checks that need more than one call: cached outputs, audits of
timed calls, and work outside the measured stream or thread.

Threat model: the candidate runs in this process and may count its calls,
look at pointers, hash its inputs, watch the clock or torch.cuda.Event
creation, start threads and streams, and behave differently once it thinks
it is timed. The checks below do not rely on it not knowing they exist;
they rely on what it cannot know before a call returns:

- Input refresh: before every timed call (warm-up included) the same input
  tensors get new values (get_inputs() with a new seed, copied in place,
  outside the timed events; a new set of tensors where get_inputs() changes
  shapes between seeds). A cache keyed on pointers, shapes or a hash of
  the values never hits, and a stale output buffer is never right.
- Audits: each timed iteration is audited with probability p, drawn from a
  private RNG independently per iteration, so knowing which earlier calls
  were audited says nothing about the next. An audit acts only after the
  call returned and its end event was recorded: it reads the output on the
  current stream right after the end event, in a random chunk order (a copy,
  see snapshot, for outputs up to 256 MiB; chunk fingerprints, see
  evaluate.guards.fingerprint, above: no second copy of a multi-GB output), so work
  still running on another stream is caught mid-write, and runs the
  reference on the same values; outputs are compared at the batch's
  synchronize, which happens for every batch anyway (at once for large
  outputs). A candidate that cheats on a fraction f of its timed
  calls survives k audits with probability (1-f)^k, and it must cheat on
  most calls to move the median.
- Traced calls among the timed ones: after one of the first three batches
  (drawn at random), and after each later batch with probability 1/2, one
  more call, untimed, on refreshed values, under the op recorders, checked
  against the reference like an audit. The correctness trials' traces show
  what the candidate dispatched before it was timed; these show what it
  dispatches once timed, so switching to the reference's own ops after
  some number of calls is caught (reference_ops). They run inside the
  timing loop, so neither the call stack nor a call count tells them from
  timed calls; a candidate that inspects torch's mode stack can still
  tell, which is why the audits compare values and do not depend on them.
- After timing, one call on fresh tensors (new pointers, new values)
  checked against the reference, its ops recorded as well.
- Stream work (CUDA): the timed loop's spin fills every SM, so work a call
  hides on a private stream cannot run before the start event (see
  evaluate.timing). Three more calls, each on a device made idle by a
  device-wide synchronize, with fresh values, fingerprint the output twice
  (chunk fingerprints, random chunk order): right
  after the end event on the current stream (o1), and after every thread
  the call started has been joined and the whole device synchronized
  (final). Work of any launcher (library call, custom kernel, Triton, CUDA
  graph, a thread launching later) that writes the output after the
  measured stream finished makes o1 differ from final, bit for bit; final
  must match the reference. The device time from the end event to idle is
  reported beside the reference's as evidence, and a tail far beyond the
  reference's (more than 1 ms and 4x it) fails too: hidden work that does
  not write the output directly still has to finish somewhere.
"""
import random
import threading
import time

import torch

from evaluate.common import flatten, nbytes, tensors_of
from evaluate.compare.compare import compare, compare_outputs, nan_fill
from evaluate.guards.fingerprint import differing_chunks, same
from evaluate.guards.ops import OpRecorder, OpTrace


def snapshot(out, rng, pieces=16):
    """Copies of out's tensors, each read in a random order of chunks.

    A plain clone reads front to back, and so does a kernel writing the
    output on another stream: started together, the clone trails the hidden
    kernel block by block and reads every element just after it is written
    (seen on the H100: a Triton kernel on a side stream and one launched from
    a thread both passed a clone-based check). In a random chunk order,
    chosen after the call returned, the first chunk read is anywhere in the
    output, so the copy matches only if the output was complete when it
    began."""
    res = []
    for o in flatten(out):
        if not isinstance(o, torch.Tensor):
            res.append(o)
            continue
        n = o.numel()
        k = min(pieces, n // 256)
        if k < 2 or not o.is_contiguous():
            res.append(o.clone())
            continue
        src = o.reshape(-1)
        dst = torch.empty_like(src)
        step = -(-n // k)
        starts = list(range(0, n, step))
        rng.shuffle(starts)
        for a in starts:
            dst[a:a + step].copy_(src[a:a + step])
        res.append(dst.view(o.shape))
    return res


class InputRefresher:
    """Gives the timed inputs new values before each call. The token
    returned is the new values themselves (kept alive through the call, for
    every call alike, so the allocator's state does not reveal audits).

    The same input tensors are refilled in place while get_inputs() keeps
    its shapes. Where it changes them between seeds (jagged problems: their
    lengths are drawn at random), the inputs list itself gets each new set:
    the call sees new tensors at whatever addresses the allocator gives, a
    cache keyed on pointers returns a stale answer that the audits catch,
    and each timing follows that set's sizes. `inputs` must be the list the
    timed function reads."""

    def __init__(self, make_inputs, inputs, rng):
        self.make_inputs = make_inputs
        self.inputs = inputs
        self.target = tensors_of(inputs)
        self.rng = rng
        self.note = ""
        self.swapped = ""
        self.n = 0

    def __call__(self):
        if self.note:
            return None
        new = self.make_inputs(self.rng.randrange(1 << 30))
        src = tensors_of(new)
        if self.swapped or not same_structure(src, self.target):
            self.swapped = ("get_inputs() changes tensor shapes between seeds: each timed call got a new input set "
                            "(timings follow its sizes)")
            self.inputs[:] = list(new)
            self.target = src
            self.n += 1
            return new
        try:
            for dst, s in zip(self.target, src):
                dst.copy_(s)
        except RuntimeError as e:
            self.note = "timed inputs cannot be refilled in place (%s): they keep their values" % str(e).splitlines()[0][:200]
            return None
        self.n += 1
        return new


def _sync_device_of(outs):
    """Device-wide synchronize of the GPU the outputs live on (none on a CPU)."""
    dev = next((t.device for t in outs if isinstance(t, torch.Tensor)), None)
    if dev is not None and dev.type == "cuda":
        torch.cuda.synchronize(dev)


class Auditor:
    """Checks randomly chosen timed calls against the reference (see the
    module docstring).

    Memory: an audited output of up to max_pending_bytes is copied (in a
    random chunk order) and compared at the batch's end, as before. A larger
    one is not copied: its chunk fingerprints are read right after the end
    event in a random order, and the audit is settled at once: a device-wide
    synchronize, the output's fingerprint again (it must not have changed
    after the end event), and the chunked comparison of the output itself
    with the reference. At most the output and the reference's output are
    held, as KernelBench holds them."""

    def __init__(self, rng, ref_call, fixed_inputs, tol, fpr, p=0.2, traced_batches=3):
        self.rng = rng
        self.ref_call = ref_call
        self.fixed = fixed_inputs
        self.fixed_ref = None
        self.tol = tol
        self.fpr = fpr
        self.p = p
        self.pending = []
        self.audited = []
        self.max_pending_bytes = 1 << 30
        # The first batches hold one traced call, after the batch drawn
        # here; traced holds what each traced call recorded: (its place, the
        # top-level torch functions with counts, the aten op trace).
        self.first_batches = traced_batches
        self.trace_at = rng.randrange(traced_batches)
        self.traced = []

    def pick(self, batch, done):
        p = self.p if done < 200 else self.p / 2
        return {k for k in range(batch) if self.rng.random() < p}

    def take(self, tok, out, iteration):
        big = nbytes(out) > self.max_pending_bytes // 4
        if big:
            o1 = self.fpr.of(out, self.rng)  # read right after the end event, random chunk order
        else:
            outs = snapshot(out, self.rng)
        ref = self._ref_for(tok)
        self.audited.append(iteration)
        if big:
            self.settle()
            self._settle_live(iteration, flatten(out), o1, ref)
            return
        self.pending.append((iteration, outs, ref))
        held = sum(nbytes(o) + nbytes(r) for _, o, r in self.pending)
        if held > self.max_pending_bytes:
            self.settle()

    def _ref_for(self, tok):
        """The reference's outputs for the values a refresh token names."""
        if tok is None:
            if self.fixed_ref is None:
                # No copy of the inputs: refreshing is off because they are large.
                self.fixed_ref = flatten(self.ref_call(self.fixed))
            return self.fixed_ref
        return flatten(self.ref_call(tok))

    def _settle_live(self, it, outs, o1, ref):
        from evaluate.timing import AuditFailed
        _sync_device_of(outs)
        bad = differing_chunks(o1, self.fpr.of(outs))
        if bad:
            raise AuditFailed(("timed iteration %d (audited at random): output %d changed after the end event (chunk %d of its "
                               "fingerprint read right after the end event differs from the one after a device-wide synchronize): "
                               "work outside the measured stream writes it") % (it, bad[0][0], bad[0][1]))
        self._compare("timed iteration %d (audited at random)" % it, outs, ref)

    def _compare(self, what, outs, ref):
        from evaluate.timing import AuditFailed
        if len(outs) != len(ref):
            raise AuditFailed("%s returned %d outputs, the reference %d" % (what, len(outs), len(ref)))
        ok, name, detail = compare_outputs(ref, outs, self.tol)
        if not ok:
            raise AuditFailed("%s differs from the reference on the same inputs: %s: %s" % (what, name, detail))

    def between(self, batch, fn, refresh):
        """Runs after each timed batch has been settled: a traced call
        after the drawn ones (see the module docstring)."""
        if batch < self.first_batches:
            if batch != self.trace_at:
                return
        elif self.rng.random() >= 0.5:
            return
        tok = refresh() if refresh is not None else None
        rec, trace = OpRecorder(), OpTrace()
        with nan_fill(), rec, trace:  # the state of every untimed call (evaluate.state.run_candidate)
            out = fn()
        outs = flatten(out)
        del out
        _sync_device_of(outs)
        where = "the traced call between timed batches %d and %d" % (batch + 1, batch + 2)
        self.traced.append((where, dict(rec.ops), list(trace.ops)))
        self._compare(where, outs, self._ref_for(tok))

    def settle(self):
        pending, self.pending = self.pending, []
        for it, outs, ref in pending:
            self._compare("timed iteration %d (audited at random)" % it, outs, ref)


def post_timing_call(run_cand, ref_call, make_inputs, seed, tol, fpr, ref_mutates):
    """One call on fresh tensors after timing. Returns (ok, detail).

    Memory: the inputs, the candidate's output and the reference's, as
    KernelBench holds them: the reference runs on the same input tensors
    after the candidate (their fingerprint shows the candidate left them
    alone), or on regenerated ones when the reference itself writes its
    inputs."""
    inputs = make_inputs(seed)
    fp_in = fpr.of(tensors_of(inputs))
    out = flatten(run_cand(inputs))
    if not same(fp_in, fpr.of(tensors_of(inputs))):
        if not ref_mutates:
            return False, "the call after timing, on fresh inputs, modified its inputs in place"
        del inputs
        inputs = make_inputs(seed)
        if not same(fp_in, fpr.of(tensors_of(inputs))):
            return True, "after timing, a call on fresh inputs ran; not compared: get_inputs() does not reproduce its values from a seed"
    ref = flatten(ref_call(inputs))
    del inputs
    if len(out) != len(ref):
        return False, "the call after timing returned %d outputs, the reference %d" % (len(out), len(ref))
    ok, name, detail = compare_outputs(ref, out, tol)
    if not ok:
        return False, "the call after timing, on fresh inputs, differs from the reference: %s: %s" % (name, detail)
    return True, "after timing, a call on fresh inputs matched the reference"


def same_structure(a, b):
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


def refill(inputs, make_inputs, seed):
    """Gives the input tensors new values in place. Returns True when they
    hold a second input set (another seed of the same shapes), False when
    only their floating-point values were rotated (get_inputs() changes
    shapes between seeds, as jagged problems do: their integer structure,
    offsets and lengths, stays), None when neither could be done."""
    dst = tensors_of(inputs)
    for k in (11, 13, 17, 19):
        b = make_inputs(seed + k)
        src = tensors_of(b)
        if same_structure(dst, src):
            for d, s in zip(dst, src):
                d.copy_(s)
            return True
        del b, src
    floats = [t for t in dst if t.is_floating_point() and t.numel() > 1]
    if not floats:
        return None
    for t in floats:
        # Rotating by about half the tensor moves every value to another
        # place, keeps the multiset of values (their range, their signs) and
        # costs one temporary the size of the tensor.
        n = t.numel()
        shift = n // 2 + 1 if n > 2 else 1
        t.copy_(torch.roll(t.reshape(-1), shift).reshape(t.shape))
    return False


def memoization_check(run_cand, ref_call, make_inputs, seed, tol, fpr, fits):
    """Same buffers, new values: a cache keyed on pointer/shape returns stale
    data. Returns (ok, detail, warning or None).

    Memory: never more than KernelBench's inputs + two outputs, except one
    moment with two input sets and no output (refilling the buffers); when
    fits(bytes) says that second set does not fit, the check is skipped and
    says so (a warning, never a silent pass). Outputs are compared by chunk
    fingerprints, not kept."""
    def ref_fp(s):
        x = make_inputs(s)
        r = ref_call(x)
        del x
        f = fpr.of(tensors_of(r))
        return f, r
    ra_fp, r = ref_fp(seed + 7)
    del r
    ca = make_inputs(seed + 7)
    out_a = run_cand(ca, -1)
    fa = fpr.of(tensors_of(out_a))
    del out_a
    in_bytes = nbytes(ca)
    if not fits(in_bytes):
        msg = ("memoization check skipped: refilling the input buffers needs a second set of inputs (%.2f GiB) that does not fit "
               "in free device memory; cached outputs are still checked by the audits on refreshed inputs and the call on fresh "
               "inputs after timing" % (in_bytes / 2**30))
        return True, msg, msg
    exact = refill(ca, make_inputs, seed)
    if exact is None:
        msg = ("memoization check skipped: get_inputs() changes tensor shapes between seeds and the inputs hold no "
               "floating-point tensor to refill in place; cached outputs are still checked by the audits and the call on "
               "fresh inputs after timing")
        return True, msg, msg
    fb_in = fpr.of(tensors_of(ca))
    out_b = run_cand(ca, -2)
    fb = fpr.of(tensors_of(out_b))
    if not same(fb_in, fpr.of(tensors_of(ca))):
        return False, "the candidate modified its refilled input buffers in place", None
    rb = tensors_of(ref_call(ca))
    del ca
    refs_differ = not same(ra_fp, fpr.of(rb))
    if refs_differ and same(fa, fb):
        return False, "refilling the input buffers with new values returned the previous outputs (cached across calls)", None
    if not exact:
        return True, ("same buffers with their floating-point values rotated (get_inputs() changes shapes between seeds) "
                      "gave new outputs; values not compared: rotated inputs may break the problem's input contract"), None
    for i, (o, r) in enumerate(zip(tensors_of(out_b), rb)):
        ok, _name, d = compare(i, r, o, tol)
        if not ok:
            return False, "after refilling the same input buffers: " + d, None
    return True, "same buffers refilled with new values gave fresh, correct outputs", None


def _join_new(before, timeout_s):
    """Joins the threads started since `before`; returns those still alive."""
    deadline = time.monotonic() + timeout_s
    alive = []
    for t in threading.enumerate():
        if t.ident in before or t is threading.current_thread():
            continue
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            alive.append(t.name)
    return alive


def _idle_call(fn, device, rng, fpr):
    """One call on an idle device. Returns (out, o1, event_s, tail_s, alive
    threads): o1 is the output's chunk fingerprint read on the current
    stream right after the end event, in a random chunk order; tail is device
    time from the end event until the whole device was idle and the call's
    threads had finished."""
    torch.cuda.synchronize(device)
    before = {t.ident for t in threading.enumerate()}
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    idle = torch.cuda.Event(enable_timing=True)
    s.record()
    out = fn()
    e.record()
    o1 = fpr.of(out, rng)
    alive = _join_new(before, 10.0)
    torch.cuda.synchronize(device)
    idle.record()
    idle.synchronize()
    return out, o1, s.elapsed_time(e) / 1e3, e.elapsed_time(idle) / 1e3, alive


def stream_work_check(cand_fn, ref_fn, refresher, ref_call, tol, device, fpr, calls=3, rng=None):
    """Work outside the measured stream or thread (module docstring).
    Returns (ok, detail, kind) with kind 'stream_work', 'audit' or 'threads'.
    Memory: the output is compared with itself by chunk fingerprints, not a
    copy; held at most: the timed inputs, the refreshed values, the output
    and the reference's output."""
    rng = rng or random.Random()
    base_tails = []
    for _ in range(calls):  # the platform's own tail: plain torch on the current stream
        _out, _o1, _ev, tail, _alive = _idle_call(ref_fn, device, rng, fpr)
        base_tails.append(tail)
        del _out, _o1
    base = sorted(base_tails)[len(base_tails) // 2]
    evs, tails = [], []
    for k in range(calls):
        tok = refresher()
        out, o1, ev, tail, alive = _idle_call(cand_fn, device, rng, fpr)
        evs.append(ev)
        tails.append(tail)
        if alive:
            return False, "stream check call %d: the call left threads running after 10 s: %s" % (k, alive), "threads"
        final = flatten(out)
        bad = differing_chunks(o1, fpr.of(final))
        if bad:
            return False, ("stream check call %d: output %d changed after the measured stream had finished "
                           "(chunk %d of its fingerprint, read right after the end event in a random chunk order, differs "
                           "from the one after a device-wide synchronize and joining the call's threads): work outside the "
                           "current stream or thread writes it; make the current stream wait for it") % (k, bad[0][0], bad[0][1]), "stream_work"
        ref = flatten(ref_call(tok)) if tok is not None else None
        if ref is not None:
            ok, name, detail = compare_outputs(ref, final, tol)
            if not ok:
                return False, "stream check call %d (fresh values, device synchronized): %s: %s" % (k, name, detail), "audit"
        del out, o1, final, tok
    tail = sorted(tails)[len(tails) // 2]
    ev = sorted(evs)[len(evs) // 2]
    detail = ("3 calls on an idle device: output stable from the end event on; device busy %.3g s after the "
              "end event (reference: %.3g s), event time %.3g s") % (tail, base, ev)
    if tail > 1e-3 and tail > 4 * base + 1e-3:
        return False, ("the device stays busy %.3g s after the measured stream is done (the reference: %.3g s): "
                       "work runs outside the current stream") % (tail, base), "stream_work"
    return True, detail, "stream_work"


def private_rng(audit_seed, salt):
    """A generator the candidate cannot predict from the job's arguments:
    seeded from the OS unless the job fixes audit_seed (tests)."""
    s = audit_seed
    if s is None:
        s = random.SystemRandom().randrange(1 << 62)
    return random.Random(int(s) * 1000003 + salt), int(s)

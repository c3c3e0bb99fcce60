"""The reference_ops check: is the candidate's work the reference's?

The rule follows the work, not the names (issue 20):
  - a candidate that dispatches every compute op of the reference's trace,
    in order, is the reference, whatever else it runs (a decoy kernel of
    its own beside the reference's whole trace changes nothing);
  - a candidate whose own kernels run (a kevolve loader, load_inline,
    Triton, cupy: the launch hooks count them) and which calls some, not
    all, of the reference's heavy ops through torch or a library passes,
    with a note naming those ops and their share of one call's time (a
    cuBLAS GEMM with the epilogue fused into a kernel of its own is the
    most common honest optimization);
  - a candidate with no kernel of its own that dispatches the reference's
    heavy ops is the reference (a plain-torch rewrite with other ops
    passes, with the harness's warning);
  - kernel_policy "strict": every heavy op must be in the candidate's own
    kernels, so any of the reference's heavy ops is a violation.

The policies, by their rule (issue 32); this is the one table of them (Go
names them in harness/types.go, the flags and run_kernel point here):

  policy       rule                           passes                          does not pass
  -----------  -----------------------------  ------------------------------  --------------------------------
  default      a user optimizing a model:     own kernels, with library       the reference's whole trace; no
  (run_kernel, a faster correct model, with   calls for some of the work      own kernel and the reference's
  evolve,      or without kernels of its own  (noted); a plain-torch          heavy ops (reference_ops)
  eval)                                       rewrite with other ops, noted
                                              "no kernel of its own"
  kernelbench  KernelBench's: the work in     own kernels, with library       any candidate with no kernel of
  (kernelbench kernels of the candidate's     calls for some of the work      its own that ran (no_own_kernel:
  run)         own, library calls beside     (noted)                         a plain-torch rewrite, a
               them allowed                                                   load_inline that failed to build
                                                                              and fell back); what default fails
  strict       every heavy op in the          own kernels doing every heavy   any of the reference's heavy ops
               candidate's own kernels        op; torch glue (views, copies); through torch or a library
                                              as default, a plain-torch       (reference_ops)
                                              rewrite with none of the
                                              reference's heavy ops (noted)

A kernel of its own is one the launch hooks saw run (evaluate.guards.hooks: a
kevolve loader, load_inline / cpp_extension, Triton, cupy, a ctypes call
into a library it built). A load_inline or load that raised is reported
whatever fallback then ran (build_failed in the warnings and notes).

Library calls made from C++ inside an extension (at::matmul, torch::mm in
load_inline code) go through the dispatcher, so the op trace sees them
exactly as it sees calls from Python."""
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from evaluate.common import HarnessError
from evaluate.guards.ops import heavy_aten, shared_work

POLICIES = ("default", "strict", "kernelbench")

# The policies that want a kernel of the candidate's own (checks/no_own_kernel).
OWN_KERNEL_REQUIRED = ("kernelbench",)


def policy_of(policy):
    """The kernel policy a job names ("" for the default)."""
    p = (policy or "default").lower()
    if p not in POLICIES:
        raise HarnessError("kernel_policy %r: use one of %s" % (p, POLICIES))
    return p


def used(mains, ref_aten, ops, aten):
    """The reference's own work in a candidate's recorded calls: (why, names)
    where why says how it reached them ("" when it did not) and names lists
    them: its main torch functions called by name, else the heavy aten ops
    both sides dispatched under any name."""
    called = sorted(o for o in mains if o in ops)
    if called:
        return "it calls the reference's own op(s) %s" % called, called
    shared = shared_work(ref_aten, aten, mains)
    if shared:
        return "it dispatches the reference's own aten op(s) %s (under another name: an alias, torch.ops, einsum)" % shared, shared
    return "", []


def violates(policy, own, why):
    """Whether calling the reference's ops (why) is a violation for a
    candidate that ran own kernels or not."""
    return bool(why) and (policy == "strict" or not own)


def decide(notes, policy, same_as_ref, why, names, own, mains, share):
    """The reference_ops check over the correctness trials' traces:
    (passed, detail). share() measures the library ops' share of one call
    (only asked for a candidate that passes with them)."""
    if same_as_ref:
        return False, "the candidate is the reference: " + same_as_ref + "; implement the work in a kernel"
    if violates(policy, own, why):
        hint = ("kernel_policy strict: every heavy op must run in the candidate's own kernels" if own
                else "no kernel of its own ran")
        return False, "the candidate's forward: %s (%s); implement them in a kernel" % (why, hint)
    if not why:
        return True, "dispatched aten ops differ from the reference's; reference main ops %s not called" % sorted(mains)
    note = "library calls beside its own kernels: the reference's %s ran through torch or a library; %s" % (names, share())
    notes.append("reference_ops: " + note)
    return True, note


def library_share(call, device, ref_aten):
    """One traced call of the candidate with every aten op timed: the share
    of the call's time spent in the ops of the reference's heavy families
    (device time on a GPU, from events around each op; wall time on the
    CPU). A text for the note."""
    timer = OpTimer(device)
    t0 = time.perf_counter()
    if timer.cuda:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
    call(timer)
    total = time.perf_counter() - t0
    if timer.cuda:
        b.record()
        b.synchronize()
        total = a.elapsed_time(b) / 1e3
    lib = 0.0
    for name, s in timer.times():
        if heavy_aten([name]) & ref_aten:
            lib += s
    where = "device time" if timer.cuda else "wall time of the call (CPU)"
    if total <= 0:
        return "their share of the %s could not be measured" % where
    return "they took %.0f%% of the %s (%.3g of %.3g ms, one traced call)" % (
        min(100.0, 100 * lib / total), where, lib * 1e3, total * 1e3)


class OpTimer(TorchDispatchMode):
    """Times each aten op a call dispatches: CUDA events around it on a GPU
    (read after the call), perf_counter on the CPU."""

    @classmethod
    def _should_skip_dynamo(cls):
        return False  # see evaluate.guards.ops.OpTrace

    def __init__(self, device):
        super().__init__()
        self.cuda = device.type == "cuda"
        self.rows = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = func(*args, **(kwargs or {}))
            b.record()
            self.rows.append((str(func), a, b))
            return out
        t = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        self.rows.append((str(func), time.perf_counter() - t))
        return out

    def times(self):
        """[(op name, seconds)], after the call has synchronized."""
        if not self.cuda:
            return list(self.rows)
        return [(n, a.elapsed_time(b) / 1e3) for n, a, b in self.rows]

"""Stateful references, called in step with the candidate (issue 32, item 3).

KernelBench level-3 34_VanillaRNNHidden keeps a hidden state on the model
and replaces it on every call: its output depends on how many calls came
before. Two models compare only when both start from the same constructed
state and are called the same number of times. A lone call of one side (a
warm-up, an audit's reference call, a memoization probe, the judge's
reference timing) puts them a step apart, and every element then differs
for a kernel that mirrors the state exactly.

How the harness keeps them in step:
- detect: after construction, one call of the reference on inputs of a
  seed no check uses. Where none of its buffers and plain attributes
  (tensors, numbers) changed, it is stateless; one with no such tensor is
  not called at all (most problems: no buffers, no tensor attributes). Where some changed, a second call on the
  same inputs: outputs that differ make it stateful (a BatchNorm's running
  statistics change but its training-mode outputs do not: not stateful).
  The reference's state is then put back as constructed (snapshot).
- the reference's state is its buffers and plain attributes: the harness's
  own copy, restored from the snapshot whenever the two sides start again;
  the candidate (whose state may live anywhere) is constructed again from
  the same seed and arguments (rebuild).
- for a stateful reference: no lone warm-up call; the trials run both once
  each, from the constructed state; the checks that call one side alone
  (the timing loop's audits, memoization, the stream check) do not run, and
  the call after timing becomes an in-step re-check of both models
  constructed afresh, IN_STEP_CALLS calls each. The judge does the same
  with its own reference (evaluate.judge.judge) and asks the candidate's process
  to construct ModelNew again before its trials (op "rebuild").
"""
import torch

from evaluate.common import clone_tree, flatten

STATE_SEED = 5151515  # far from every seed a check uses
IN_STEP_CALLS = 2
_SCALARS = (bool, int, float)


def _items(model):
    """((module path, kind, name), value) of what a call may change:
    buffers and plain attributes (tensors, numbers), not parameters."""
    for path, m in model.named_modules():
        for name, b in m._buffers.items():
            if b is not None:
                yield (path, "buffer", name), b
        for name, v in vars(m).items():
            if name.startswith("_") or name == "training":
                continue
            if (isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter)) or type(v) in _SCALARS:
                yield (path, "attr", name), v


def _copy(v):
    return v.detach().clone() if isinstance(v, torch.Tensor) else v


def snapshot(model):
    return {k: _copy(v) for k, v in _items(model)}


def restore(model, snap):
    """Puts the state back as snapshot (copies: the snapshot stays intact)."""
    mods = dict(model.named_modules())
    for (path, kind, name), v in snap.items():
        m = mods.get(path)
        if m is None:
            continue
        if kind == "buffer":
            m._buffers[name] = _copy(v)
        else:
            m.__dict__[name] = _copy(v)


def _same(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and a.device == b.device and torch.equal(a, b))
    return a == b


def changed(model, snap):
    now = dict(_items(model))
    return now.keys() != snap.keys() or any(not _same(now[k], snap[k]) for k in snap)


def _close(a, b):
    a, b = flatten(a), flatten(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not torch.allclose(x.float(), y.float(), rtol=1e-3, atol=1e-5, equal_nan=True):
                return False
        elif not isinstance(x, torch.Tensor) and x != y:
            return False
    return True


def detect(model, call, inputs):
    """(stateful, snapshot of the constructed state). call(x): one forward
    of the reference; inputs(): a fresh input set (made twice: a reference
    may write its inputs). The model's state is as constructed after."""
    snap = snapshot(model)
    if not any(isinstance(v, torch.Tensor) for v in snap.values()):
        return False, snap  # no tensor a call could carry over: no extra call (numbers alone are not tried)
    out1 = clone_tree(call(inputs()))
    if not changed(model, snap):
        return False, snap
    out2 = call(inputs())
    restore(model, snap)
    return not _close(out1, out2), snap


# ---- the evaluation process's side


def detect_stage(st):
    """The stage after construct: whether the reference is stateful; if so
    the note, the snapshot, and how to construct the candidate again."""
    st.stateful = False
    try:
        stateful, snap = detect(st.ref_model, st.ref_forward, lambda: st.make_inputs(st.job.seed + STATE_SEED))
    finally:
        st.side.now = "harness"
    # The state put back is the harness's doing (no candidate code ran
    # since the reference's last call was checked): the new baseline.
    st.tamper.settle()
    if not stateful:
        return
    st.stateful, st.ref_state = True, snap
    st.rebuild = _rebuilder(st)
    st.res["notes"].append("the reference is stateful (its output for the same inputs changes from call to call): both models are "
                           "compared in step, each called as often from its constructed state; the timing loop's audits, the "
                           "memoization and stream checks do not run, and an in-step re-check of %d calls of both, constructed "
                           "again, follows the timing" % IN_STEP_CALLS)


def _rebuilder(st):
    """The candidate constructed again as construct built it: same seed,
    same arguments, same way (device context or host)."""
    from evaluate.compare.construct import build, init_inputs_of, seed as seed_all
    cls, device, seed, on_host = st.cand_mod.ModelNew, st.device, st.job.seed, st.constructed_on_host
    init = init_inputs_of(st.ref_mod, seed, device)

    def rebuild():
        seed_all(seed, device)
        return build(cls, init, device, not on_host)[0]
    return rebuild


def recheck(st):
    """After timing, for a stateful reference: both models from their
    constructed state again, IN_STEP_CALLS calls of each on fresh inputs,
    compared call by call. (ok, detail) for the audit check."""
    from evaluate.guards.integrity import post_timing_call
    in_step(st)
    for i in range(IN_STEP_CALLS):
        ok, detail = post_timing_call(lambda x: st.run_candidate(x, -3), st.ref_call, st.make_inputs,
                                      st.job.seed + 4242 + i, st.tol, st.fpr, st.ref_mutates)
        if not ok:
            return False, "in-step call %d of both models constructed again after timing (a stateful reference): %s" % (i + 1, detail)
    return True, ("stateful reference: %d in-step calls of both models, constructed again after timing, matched "
                  "(no audits inside the timing loop: a lone call would put the two out of step)" % IN_STEP_CALLS)


def in_step(st):
    """Both sides back to their constructed state: the reference's from its
    snapshot, the candidate constructed again."""
    st.tamper.check("before the models are put back in step")
    restore(st.ref_model, st.ref_state)
    st.tamper.settle()
    st.cand_model = st.side.run("candidate", st.rebuild)

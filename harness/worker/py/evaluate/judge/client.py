"""The candidate process's side of the judge (evaluate.judge.judge): starts it
before any candidate code runs, and in the verify stage serves its
requests (run ModelNew on the judge's inputs and share the outputs back,
run k calls for the outside timing).

Nothing here decides anything: whatever this process reports, the judge
compares and times for itself and writes judge.json, which the Go side
reads. A candidate that rewrites this module only makes the judge's
verdict worse (a missing or failed judge is not a pass)."""
import os
import select
import time

import torch

from evaluate.judge import judge as evaluate_judge
from evaluate.judge import batch
from evaluate.judge import wire
from evaluate.common import release

# The judge of this process: forked at its first job, before its CUDA
# context; a kept child's later jobs use it again (a process with a CUDA
# context cannot fork one that uses CUDA).
_JUDGE = {"pid": None, "sock": None}


class Handle:
    def __init__(self, sock, pid, why=""):
        self.sock = sock
        self.pid = pid
        self.why = why  # why there is no judge (sock None)


def spawn_early():
    """Forks the judge in the worker's child before the jail's PID
    namespace is made, so the judge stays outside it (where it can stop
    and account every process of the jail) and before CUDA and any
    candidate code. The jailed process inherits the socket."""
    if _JUDGE["pid"] is None:
        _JUDGE["pid"], _JUDGE["sock"] = evaluate_judge.spawn()


def start(ctx, args):
    """Gives the judge this job (forking it first if this process has
    none and may). Called at the start of evaluate.main(), before the
    candidate is imported and before this process initializes CUDA."""
    from sandbox import jail
    if args.get("judge") is False:
        return Handle(None, None, "the judge is off for this job (KEVOLVE_JUDGE=off)")
    if not _alive():
        if _JUDGE["sock"] is not None:
            _JUDGE["sock"].close()
            _JUDGE["sock"] = None
        if torch.cuda.is_initialized():
            return Handle(None, None, "this process's judge is gone and a process with a CUDA context cannot fork a new one")
        if jail.in_own_namespace():
            return Handle(None, None, "this process's judge is gone and one forked inside the jail could not stop it")
        _JUDGE["pid"], _JUDGE["sock"] = evaluate_judge.spawn()
    # The judge outlives the job in a kept child: the worker spares it when
    # it kills what the job started (Go checks the pid the judge declared).
    ctx.helper_pids = {_JUDGE["pid"]}
    try:
        wire.send(_JUDGE["sock"], {"op": "job", "job_dir": os.path.abspath(ctx.job_dir), "job_id": getattr(ctx, "job_id", None)})
        msg, _ = wire.recv(_JUDGE["sock"])  # the judge has read what it needs from the job's folder
        if msg is None or msg.get("op") != "ready":
            raise wire.WireError("no ready from the judge: %r" % (msg,))
    except (OSError, wire.WireError) as e:
        _abandon()
        return Handle(None, None, "could not reach the judge: %s" % e)
    return Handle(_JUDGE["sock"], _JUDGE["pid"])


def _alive():
    """Whether the judge still listens: it sends nothing unasked, so a
    socket with anything to read (its end closed) or an error is a dead
    judge. (It may not be this process's child: spawn_early.)"""
    sock = _JUDGE["sock"]
    if sock is None or _JUDGE["pid"] is None:
        return False
    p = select.poll()
    p.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        return not p.poll(0)
    except OSError:
        return False


def seal(res):
    """The result as it stands now, serialized: what the worker writes
    first in result.json, and whose hash the judge keeps before any of the
    candidate's code runs in the verify stage (the Go side checks it)."""
    import hashlib
    import json
    b = json.dumps(res, default=str).encode()
    return b, hashlib.sha256(b).hexdigest()


def verify(h, res, state, progress, budget_s, sealed_sha=""):
    """The verify stage: the judge checks a passing in-process result on
    its own inputs and bounds its timing; any other verdict is final as it
    is (the judge can only make one worse) and the judge records a skip.
    res["judge"] is the judge's report as it sent it (the Go side reads
    the file)."""
    if h.sock is None:
        res["judge"] = {"status": "unavailable", "detail": h.why}
        state.pop("cand_model", None)
        return
    progress("verify")
    t0 = time.monotonic()
    model = state.get("cand_model")
    try:
        if res.get("verdict") != "pass" or model is None:
            wire.send(h.sock, {"op": "skip", "reason": "in-process verdict %s" % res.get("verdict"), "result_sha256": sealed_sha})
        else:
            # Unused cached blocks go back where memory is short (the judge
            # needs room for its inputs and the reference's outputs); a
            # forced empty_cache cost each evaluation its cudaFree calls.
            release(state["device"])
            cand = res.get("candidate") or {}
            wire.send(h.sock, {"op": "verify", "candidate_median_s": cand.get("median_s"),
                               "reference_median_s": (res.get("ref_eager") or {}).get("median_s"), "budget_s": budget_s,
                               "skip_timing": res.get("candidate") is None,
                               # Both models were built on the host (a constructor escaped the device context):
                               # the judge builds its reference that way too. A false word only makes the
                               # judge's weights differ from the candidate's: a worse verdict, never a better one.
                               "construct_on_host": bool(state.get("construct_on_host")),
                               "result_sha256": sealed_sha})
        res["judge"] = _serve(h.sock, model, state["device"], state.get("rebuild"))
    except (OSError, wire.WireError) as e:
        res["judge"] = {"status": "unavailable", "detail": "the judge did not answer: %s" % e}
        _abandon()  # mid-conversation: it cannot serve another job
    state.pop("cand_model", None)
    release(state["device"])
    res.setdefault("stage_s", {})["verify"] = round(time.monotonic() - t0, 4)


def _abandon():
    """Ends this process's judge: killed where this process forked it;
    from inside the jail (the judge is outside, its pid means nothing
    here) the closed socket ends it at its next read."""
    import signal
    from sandbox import jail
    if _JUDGE["pid"] is not None and not jail.in_own_namespace():
        try:
            os.kill(_JUDGE["pid"], signal.SIGKILL)
            os.waitpid(_JUDGE["pid"], 0)
        except OSError:
            pass
    if _JUDGE["sock"] is not None:
        _JUDGE["sock"].close()
    _JUDGE["pid"] = _JUDGE["sock"] = None


def keep(h, ok, why):
    """A child may serve another job only with its judge alive."""
    if ok and (h.sock is None or not _alive()):
        return False, "the judge process is gone"
    return ok, why


def _serve(sock, model, device, rebuild=None):
    """Answers the judge's requests until it reports what it wrote.
    rebuild: ModelNew constructed again, for a stateful reference's
    in-step trials (evaluate.guards.stateful); None where it is not stateful."""
    held = {"inputs": None, "outputs": None, "enc": None, "model": model, "rebuild": rebuild, "slots": None,
            "batch_inputs": None}
    while True:
        msg, fds = wire.recv(sock)
        if msg is None:
            raise wire.WireError("the judge closed the connection")
        op = msg.get("op")
        if op == "written":
            return msg.get("judge")
        if op == "end":
            held.update(inputs=None, outputs=None, enc=None, model=None, rebuild=None, slots=None, batch_inputs=None)
            continue
        try:
            reply, out_fds = _answer(op, msg, fds, held, held["model"], device)
        except BaseException as e:  # noqa: BLE001 - the candidate's failure, reported to the judge
            reply, out_fds = {"ok": False, "candidate_error": True, "error": "%s: %s" % (type(e).__name__, str(e)[:500])}, []
        finally:
            for fd in fds:
                os.close(fd)
        reply["pid"] = os.getpid()
        # The descriptors are the shared storages' own: sending dups them.
        wire.send(sock, reply, out_fds)


def _answer(op, msg, fds, held, model, device):
    if op == "nop":
        return {"ok": True}, []
    if op == "rebuild":
        if held["rebuild"] is None:
            return {"ok": False, "error": "no stateful reference here: nothing to construct again"}, []
        held.update(inputs=None, outputs=None, enc=None, model=None)
        held["model"] = held["rebuild"]()
        return {"ok": True}, []
    if op == "release":
        held.update(inputs=None, outputs=None, enc=None, slots=None, batch_inputs=None)
        if device.type == "cuda":
            torch.cuda.ipc_collect()
        return {"ok": True}, []
    if op == "run":
        held.update(inputs=None, outputs=None, enc=None)
        x = held["inputs"] = _decode(msg, fds, device, "inputs")
        out = _call(model, x, device)
        tree, enc = wire.encode(out)
        held["outputs"], held["enc"] = out, enc
        return {"ok": True, "outputs": tree, "tensors": enc.tensors}, list(enc.fds)
    if op == "time":
        k = int(msg.get("k") or 1)
        x = held["inputs"]
        with torch.no_grad():
            for _ in range(max(1, min(k, 100000))):
                out = model(*x)
                del out
        if device.type == "cuda" and msg.get("sync", True):
            torch.cuda.synchronize(device)
        return {"ok": True}, []
    if op == "batch_stage":
        staged = _decode(msg, fds, device, "staged")
        held["slots"], held["batch_inputs"] = staged if staged is not None else (None, None)
        if staged is not None:
            batch.touch(staged)
        return {"ok": True}, []
    if op == "checked":
        return _checked(msg, held, model, device)
    if op == "sync":
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return {"ok": True}, []
    return {"ok": False, "error": "unknown op %r" % (op,)}, []


def _decode(msg, fds, device, key):
    dec = wire.Decoder(msg.get("tensors"), list(fds), device)
    try:
        return dec.dec(msg.get(key))
    finally:
        dec.fds = []  # closed by the caller


def _checked(msg, held, model, device):
    """One of the judge's checked calls (evaluate.judge.batch): ModelNew on
    row i of the staged inputs (the judge wrote their values just before),
    its outputs written to row i of the staged slots before the answer."""
    slots, x = held["slots"], held["batch_inputs"]
    i = int(msg.get("i", -1))
    if slots is None or x is None or not 0 <= i < len(slots[0]):
        return {"ok": False, "error": "no checked call %d staged" % i}, []
    with torch.no_grad():
        batch.write(slots, i, model(*batch.row(x, i)))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return {"ok": True}, []


def _call(model, x, device):
    with torch.no_grad():
        out = model(*x)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out

"""The reference's torch.compile baseline, measured by a job of its own.

The speedup over torch.compile is a figure every sweep reports, and the
timing behind it is kept in the database for every later evaluation of the
same reference (harness/baseline.go). It was measured in the candidate's
process, after the candidate's code had run there: a candidate could patch
torch.compile, change Inductor's configuration, or queue work on the device
while the compiled reference was timed, and the slowed figure it left would
have served every later evaluation of the problem for a week. It is now
measured as the eager reference is: by harness code that runs no candidate,
here in a worker child of its own, with the reference's code and seeds as
the evaluation's (the model from the job's seed, the inputs from seed + 99).

On a GPU, Go starts this job beside the candidate's build
(harness/compilejob.go), so torch.compile's work on the host (10-15 s of CPU
a problem on the H200 host) is off the evaluation's path: Inductor's compile
runs before the device gate, and the compiled code's first run (with
Triton's autotuning) and the timed calls hold the device. On the CPU it runs
after the candidate's timing, all of it in the device phase.

args: reference ({"path"} or {"code"}), target, seed and compile_cap_s (the
Go side's compileCap). Returns {"ref_compile": stats, "seconds": the job's
own wall} or {"warning": why there is no timing}."""
import time

import torch

from evaluate.common import is_oom, load_module, release, to_device
from evaluate.compare import construct
from evaluate.job import Job
from evaluate.timing import Timer, time_limit

# The seed offset of the compiled reference's inputs: the evaluation's
# timing_compile stage drew them from seed + 99, so stored baselines from
# before this job measured the same inputs.
INPUT_SEED_OFFSET = 99


def main(args, ctx):
    t0 = time.monotonic()
    job = Job.parse(dict(args, candidate={}))
    device = torch.device("cuda", 0) if job.target in ("nvidia", "amd") else torch.device("cpu")
    try:
        if device.type != "cuda":
            # On the CPU the compile shares the cores with any timing: it
            # runs in the device phase, as the timed calls do.
            ctx.progress("wait_device")
            ctx.gate()
        model, x = _reference(job, device, ctx)
        timer = Timer(device, job.flush_for(device))
        ctx.progress("compile")
        compiled = _compiled(model, x, job.compile_cap_for(device), device, lambda: _gate(ctx))
        ctx.progress("timing")
        stats = timer.bench(lambda: _call(compiled, x), job.cap_for(device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        ctx.ungate()  # the device is the next job's while this one tears down
    except BaseException as e:  # noqa: BLE001 - a baseline that fails is a warning, never a verdict
        return {"warning": _why(e), "seconds": round(time.monotonic() - t0, 3)}
    finally:
        release(device, force=True)
    return {"ref_compile": stats, "seconds": round(time.monotonic() - t0, 3)}


def _reference(job, device, ctx):
    """The reference built as the evaluation and the judge build it, and
    its inputs for the compiled timing."""
    ctx.progress("load_reference")
    if device.type == "cuda":
        # The settings the evaluation times under (evaluate.stages.load.setup).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    mod, _ = load_module(job.reference, "kevolve_baseline_reference", ctx.work_dir)
    init = construct.init_inputs_of(mod, job.seed, device)
    construct.seed(job.seed, device)
    model, _ = construct.build(mod.Model, init, device, True)
    construct.seed(job.seed + INPUT_SEED_OFFSET, device)
    with torch.device(device):
        x = mod.get_inputs()
    if not isinstance(x, (list, tuple)):
        raise TypeError("get_inputs() returned a %s" % type(x).__name__)
    return model, list(to_device(x, device))


def _compiled(model, x, cap_s, device, gate):
    """torch.compile of the model, compiled by its first call within cap_s,
    with the device gate taken (gate) once Inductor has made the graph's
    code and before that code first runs: the compile (CPU work, most of
    the first call) stays outside the device phase, and its first run,
    with Triton's autotuning of its kernels, inside it, where it cannot
    slow another evaluation's timing. Inductor compiles in this process:
    its default pool of compile workers, one per core, would be one pool
    per evaluation while a sweep builds on every core."""
    import torch._inductor.config as inductor_config
    compiled = torch.compile(model, backend=_GatedInductor(gate))
    with time_limit(cap_s), inductor_config.patch(compile_threads=1):
        _call(compiled, x)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    gate()  # a reference Dynamo ran without a graph to compile
    return compiled


class _GatedInductor(torch._TorchCompileInductorWrapper):
    """torch.compile's default backend (Inductor, default mode), calling
    gate() once it has compiled a graph, before Dynamo runs it."""

    def __init__(self, gate):
        super().__init__(None, None, None)
        self._gate = gate

    def __call__(self, model_, inputs_):
        compiled = super().__call__(model_, inputs_)
        self._gate()
        return compiled


def _gate(ctx):
    ctx.progress("wait_device")
    ctx.gate()
    ctx.progress("compile")


def _call(fn, x):
    with torch.no_grad():
        return fn(*x)


def _why(e):
    if is_oom(e):
        return "torch.compile of the reference ran out of memory; no compiled timing"
    first = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
    return "torch.compile of the reference failed or timed out: %s" % first

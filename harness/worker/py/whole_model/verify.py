"""Model verification job (run in the warm worker like evaluate): a model
patched with a kevolve_kernels package against the original, on fresh
inputs, correct within the harness's tolerance for the output dtype, and
both timed the way the harness times (evaluate.timing; eager, and
torch.compile of the original when asked).

args: model_file, package_dir (the folder holding kevolve_kernels), seed,
compile (bool), cap_s (timing cap per measurement), device. Returns
{correct, detail, eager_s, patched_s, compile_s, autotune_s (GPU),
patched_compile_s, cv,
speedup_vs_eager, speedup_vs_compile (the faster of the patched model and
the patched model under torch.compile, against torch.compile of the
original), engaged, stats}."""
import copy
import importlib
import os
import sys

import torch

from evaluate.compare import compare as evaluate_compare
from evaluate import timing as evaluate_timing
from whole_model.profile import host_events, load_model, on_device


def _outputs(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def check(refs, outs):
    """(ok, detail): every output within the harness's dtype tolerance, no NaN/Inf."""
    refs, outs = _outputs(refs), _outputs(outs)
    if len(refs) != len(outs):
        return False, "%d outputs, expected %d" % (len(outs), len(refs))
    for i, (r, o) in enumerate(zip(refs, outs)):
        if not torch.isfinite(o).all() and torch.isfinite(r).all():
            return False, "output %d has NaN or Inf" % i
        ok, name, detail = evaluate_compare.compare(i, r, o, None)[:3]
        if not ok:
            return False, "%s: %s" % (name, detail)
    return True, ""


def compile_baselines(model, kk, inputs, timer, cap, patched_s, device):
    """torch.compile of the original (compile_s, default mode; autotune_s,
    max-autotune-no-cudagraphs, on a GPU), and the patched model with
    Inductor compiling everything around the deployed kernels
    (patched_compile_s: the figure a torch.compile user gets from the
    package). speedup_vs_compile is the faster patched figure against the
    faster torch.compile; compile_error names each one that failed."""
    out, errors = {}, []
    runs = [("compile", lambda: torch.compile(model)),
            ("patched_compile", lambda: kk.patch(copy.deepcopy(model), inductor=True))]
    if device.type == "cuda":
        runs.append(("autotune", lambda: torch.compile(copy.deepcopy(model), mode="max-autotune-no-cudagraphs")))
    for name, make in runs:
        try:
            f = make()
            f(*inputs)
            m = timer.bench(lambda: f(*inputs), cap, min_iters=10, max_iters=200, target_rse=0.01)
            out[name + "_s"] = m["median_s"]
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            errors.append("%s: %s: %s" % (name, type(e).__name__, str(e)[:300]))
    if errors:
        out["compile_error"] = "; ".join(errors)
    if "compile_s" in out:
        best = min(out["compile_s"], out.get("autotune_s", out["compile_s"]))
        out["speedup_vs_compile"] = best / min(patched_s, out.get("patched_compile_s", patched_s))
    return out


def _import_package(pkg_dir):
    for name in [m for m in sys.modules if m == "kevolve_kernels" or m.startswith("kevolve_kernels.")]:
        del sys.modules[name]
    sys.path.insert(0, pkg_dir)
    try:
        return importlib.import_module("kevolve_kernels")
    finally:
        sys.path.remove(pkg_dir)


def main(args, ctx):
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    device = torch.device(args.get("device") or "cpu")
    seed = int(args.get("seed") or 0)
    cap = float(args.get("cap_s") or 5.0)
    ctx.progress("loading", 0, 4)
    mod, model, _ = load_model(args["model_file"], device, seed)
    kk = _import_package(args["package_dir"])
    patched = kk.patch(copy.deepcopy(model))
    torch.manual_seed(seed + 1000)  # fresh inputs, not the profile's
    inputs = on_device(mod.get_inputs(), device)
    ctx.progress("correctness", 1, 4)
    with torch.no_grad():
        ok, detail = check(model(*inputs), patched(*inputs))
    res = {"correct": ok, "detail": detail, "stats": kk.stats(patched), "engaged": engaged(patched, inputs, device)}
    if not ok:
        return res
    ctx.progress("timing", 2, 4)
    timer = evaluate_timing.Timer(device, 64 << 20 if device.type == "cuda" else 8 << 20)
    with torch.no_grad():
        eager = timer.bench(lambda: model(*inputs), cap, min_iters=10, max_iters=200, target_rse=0.01)
        fast = timer.bench(lambda: patched(*inputs), cap, min_iters=10, max_iters=200, target_rse=0.01)
        res.update(eager_s=eager["median_s"], patched_s=fast["median_s"], eager_cv=eager.get("cv"), cv=fast.get("cv"))
        res["speedup_vs_eager"] = eager["median_s"] / fast["median_s"]
        if args.get("compile"):
            ctx.progress("compile", 3, 4)
            res.update(compile_baselines(model, kk, inputs, timer, cap, fast["median_s"], device))
    res["stats"] = kk.stats(patched)
    return res


def engaged(patched, inputs, device):
    """{entry id: calls a forward} of the deployed kernels seen in a
    profiler trace of one patched forward: each kernel call runs inside a
    label named kevolve_kernels::e_<entry id>. An entry missing here never
    ran, whatever the registry says."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.no_grad():
        with profile(activities=acts) as prof:
            patched(*inputs)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
    out = {}
    for e in host_events(prof):
        if e.name.startswith("kevolve_kernels::e_"):
            eid = e.name[len("kevolve_kernels::e_"):]
            out[eid] = out.get(eid, 0) + 1
    return out

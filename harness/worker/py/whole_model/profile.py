"""Model profiling job (run in the warm worker like evaluate): profile a
KernelBench-format model on its device, attribute time to the regions of
whole_model.patterns (and to every other graph node) without double counting, and
extract each region as a standalone KernelBench problem with the shapes,
dtypes and weights it saw in a real forward.

Time attribution: the traced graph runs under torch.profiler with one
record_function label per node; a node's time is what ran inside its label
(device time of the kernels it launched on a GPU; CPU time of the operators
it called, the label's own interpreter overhead excluded, on the CPU).
Labels do not nest, so no time is counted twice. Shares are of the plain
model's measured forward time, so framework overhead stays unattributed.

args: model_file, out_dir (where problems and their data go), iters,
device ("cpu" | "cuda"). Returns {device, arch, forward_us, time_basis,
nodes: [...], regions: [...]}."""
import importlib.util
import os
import time

import torch
import torch.fx as fx

from whole_model import patterns as mp


def load_model(path, device, seed=0):
    spec = importlib.util.spec_from_file_location("kevolve_user_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(seed)
    model = mod.Model(*mod.get_init_inputs()).to(device).eval()
    torch.manual_seed(seed + 1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    return mod, model, inputs


class Recorder(fx.Interpreter):
    """Runs the graph, keeping every node's value's tensor meta and, when
    labelled, wrapping each node in a profiler label."""

    def __init__(self, gm, label=False):
        super().__init__(gm)
        self.label, self.meta, self.values = label, {}, {}

    def run_node(self, n):
        if self.label and n.op not in ("placeholder", "output", "get_attr"):
            with torch.profiler.record_function("kv::" + n.name):
                v = super().run_node(n)
        else:
            v = super().run_node(n)
        if isinstance(v, torch.Tensor):
            self.meta[n] = (tuple(v.shape), v.dtype)
            self.values[n] = v
        return v


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward_time_us(model, inputs, device, iters):
    ts = []
    with torch.no_grad():
        for _ in range(2):
            model(*inputs)
        for _ in range(iters):
            _sync(device)
            t0 = time.perf_counter()
            model(*inputs)
            _sync(device)
            ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e6


def _profiled(run, device, iters):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.no_grad():
        run()
        _sync(device)
        with profile(activities=acts) as prof:
            for _ in range(iters):
                run()
            _sync(device)
    return label_times(prof, device, iters)


def label_times(prof, device, iters):
    """Microseconds per forward inside each kv:: label: the device time of
    the kernels launched inside it on a GPU, the CPU time of the operators
    called inside it (not the label's own overhead) on the CPU."""
    out = {}
    for e in prof.events():
        if not e.name.startswith("kv::"):
            continue
        if device.type == "cuda":
            t = e.device_time_total
        else:
            t = e.cpu_time_total - e.self_cpu_time_total
        out[e.name[4:]] = out.get(e.name[4:], 0.0) + t / iters
    return out


def fx_regions(model, inputs, device, iters):
    """Regions of the traced graph, each with its values and time, and the
    timed nodes outside every region."""
    gm = mp.trace(model)
    rec = Recorder(gm)
    with torch.no_grad():
        rec.run(*inputs)
    regions = mp.find_regions(gm)
    labelled = Recorder(gm, label=True)
    times = _profiled(lambda: labelled.run(*inputs), device, iters)
    inside = {n.name for r in regions for n in r.nodes}
    others = [(n.name, str(n.target), times[n.name]) for n in gm.graph.nodes if n.name in times and n.name not in inside]
    return gm, [(r, rec.values, sum(times.get(n.name, 0.0) for n in r.nodes)) for r in regions], others


class _Label:
    """Forward hooks that wrap a module's call in a profiler label."""

    def __init__(self, name):
        self.name, self.rf = "kv::" + name, None

    def pre(self, m, args):
        self.rf = torch.profiler.record_function(self.name)
        self.rf.__enter__()

    def post(self, m, args, out):
        self.rf.__exit__(None, None, None)


def module_level_regions(model, inputs, device, iters):
    """The fallback when torch.fx cannot trace: normalization and Linear
    modules, their values captured by forward hooks."""
    regions = mp.module_regions(model)
    values = [{} for _ in regions]
    hooks = []
    for r, v in zip(regions, values):
        hooks.append(r.module.register_forward_hook(lambda m, a, o, v=v: v.update(x=a[0], out=o) if not v else None))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    hooks = []
    for r in regions:
        lab = _Label(r.where)
        hooks += [r.module.register_forward_pre_hook(lab.pre), r.module.register_forward_hook(lab.post)]
    try:
        times = _profiled(lambda: model(*inputs), device, iters)
    finally:
        for h in hooks:
            h.remove()
    return model, [(r, v, times.get(r.where, 0.0)) for r, v in zip(regions, values) if "x" in v], []


def main(args, ctx):
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    device = torch.device(args.get("device") or "cpu")
    iters = int(args.get("iters") or 10)
    ctx.progress("loading", 0, 3)
    mod, model, inputs = load_model(args["model_file"], device)
    ctx.progress("profiling", 1, 3)
    fwd = forward_time_us(model, inputs, device, iters)
    note = ""
    try:
        root, found, others = fx_regions(model, inputs, device, iters)
    except Exception as e:  # noqa: BLE001 - data-dependent control flow, math on sizes
        note = "torch.fx could not trace the model (%s: %s): normalization and Linear modules only, no chains" % (type(e).__name__, str(e)[:200])
        root, found, others = module_level_regions(model, inputs, device, iters)
    attributed = sum(t for _, _, t in found) + sum(t for _, _, t in others)
    total = max(fwd, attributed)
    ctx.progress("extracting", 2, 3)
    os.makedirs(args["out_dir"], exist_ok=True)
    from whole_model import extract as model_extract
    regions = [model_extract.describe(root, values, r, i, t, total, args["out_dir"], args["model_file"])
               for i, (r, values, t) in enumerate(found)]
    nodes = [{"name": n, "target": tg, "time_us": t, "share": t / total} for n, tg, t in others]
    return {"device": str(device), "arch": mp.device_arch(device), "forward_us": fwd, "attributed_us": attributed,
            "total_us": total, "note": note,
            "time_basis": "device time of each node's kernels" if device.type == "cuda" else "CPU time of each node's operators",
            "regions": regions, "nodes": nodes}

"""Model profiling job (run in the warm worker like evaluate): profile a
KernelBench-format model on its device, attribute time to the regions of
model_patterns (and to every other graph node) without double counting, and
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

import model_patterns as mp


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


def node_times_us(gm, inputs, device, iters):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    rec = Recorder(gm, label=True)
    with torch.no_grad():
        rec.run(*inputs)
        _sync(device)
        with profile(activities=acts) as prof:
            for _ in range(iters):
                rec.run(*inputs)
            _sync(device)
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


def main(args, ctx):
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    device = torch.device(args.get("device") or "cpu")
    iters = int(args.get("iters") or 10)
    ctx.progress("loading", 0, 3)
    mod, model, inputs = load_model(args["model_file"], device)
    note = ""
    try:
        gm = mp.trace(model)
    except Exception as e:  # noqa: BLE001 - data-dependent control flow
        return {"error": "torch.fx could not trace the model (%s: %s): no regions" % (type(e).__name__, e)}
    rec = Recorder(gm)
    with torch.no_grad():
        rec.run(*inputs)
    regions = mp.find_regions(gm)
    ctx.progress("profiling", 1, 3)
    fwd = forward_time_us(model, inputs, device, iters)
    times = node_times_us(gm, inputs, device, iters)
    attributed = sum(times.values())
    total = max(fwd, attributed)
    ctx.progress("extracting", 2, 3)
    os.makedirs(args["out_dir"], exist_ok=True)
    import model_extract
    in_region = set()
    out_regions = []
    for i, r in enumerate(regions):
        in_region |= {n.name for n in r.nodes}
        t = sum(times.get(n.name, 0.0) for n in r.nodes)
        out_regions.append(model_extract.describe(gm, rec, r, i, t, total, args["out_dir"], args["model_file"]))
    nodes = []
    for n in gm.graph.nodes:
        if n.name in times and n.name not in in_region:
            nodes.append({"name": n.name, "target": str(n.target), "time_us": times[n.name], "share": times[n.name] / total})
    return {"device": str(device), "arch": mp.device_arch(device), "forward_us": fwd, "attributed_us": attributed,
            "total_us": total, "note": note,
            "time_basis": "device time of each node's kernels" if device.type == "cuda" else "CPU time of each node's operators",
            "regions": out_regions, "nodes": nodes}

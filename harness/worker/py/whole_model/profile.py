"""Model profiling job (run in the warm worker like evaluate): profile a
KernelBench-format model on its device, cut it into regions and extract
each as a standalone KernelBench problem with the shapes, dtypes, strides
and weights it saw in a real forward.

The model is captured through TorchDynamo (whole_model.capture), so any
model torch.compile runs is seen whole and its graph breaks are reported.
The signature regions the deploy runtime knows (whole_model.patterns, by
torch.fx or by module) claim their nodes in the captured graphs
(whole_model.claims); the partitioner (whole_model.partition) cuts the
rest into attention, GEMM-with-epilogue, reduction and pointwise regions.
Regions of the same structure and shapes (layers) are one problem.

Time attribution: every captured node runs under its own profiler label
(device time of the kernels it launched on a GPU; CPU time of the
operators it called on the CPU); the graphs and the forward are timed on a
second run where each graph runs its own code. Regions, the glue between
them inside the graphs and what ran outside every graph (not captured)
add up to the profiled forward. Where TorchDynamo captures nothing the
profile falls back to torch.fx labels (or the modules), as before.

args: model_file, out_dir (where problems and their data go), iters,
device ("cpu" | "cuda"). Returns {device, arch, forward_us, time_basis,
total_us, note, capture, nodes: [...], regions: [...]}."""
import importlib.util
import json
import os
import sys
import time

import torch
import torch.fx as fx

from whole_model import capture, claims, partition, regionsrc
from whole_model import patterns as mp


def load_model(path, device, seed=0, name="kevolve_user_model"):
    """(module, model in eval mode on device, inputs on device) of a
    KernelBench-format file. The module is registered in sys.modules under
    name: TorchDynamo looks up the module of the code it traces."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    torch.manual_seed(seed)
    model = mod.Model(*on_device(mod.get_init_inputs(), device)).to(device).eval()
    torch.manual_seed(seed + 1)
    return mod, model, on_device(mod.get_inputs(), device)


def on_device(xs, device):
    """The tensors among xs moved to device, the rest as they are."""
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in xs]


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


def host_events(prof):
    """The profile's events recorded on the host. On a GPU each label also
    appears as a range on the device's timeline (a user annotation of the
    same name) whose time is its kernels' again: summing both counted
    every kernel twice."""
    from torch.autograd import DeviceType
    return [e for e in prof.events() if e.device_type == DeviceType.CPU]


def label_times(prof, device, iters):
    """Microseconds per forward inside each kv:: label: the device time of
    the kernels launched inside it on a GPU, the CPU time of the operators
    called inside it (not the label's own overhead) on the CPU."""
    out = {}
    for e in host_events(prof):
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


def module_values(model, inputs, regions):
    """Each module-level region's input and output ({"x", "out"}) on one
    forward, by forward hooks."""
    values = [{} for _ in regions]
    hooks = []
    for r, v in zip(regions, values):
        hooks.append(r.module.register_forward_hook(lambda m, a, o, v=v: v.update(x=a[0], out=o) if not v else None))
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    return values


def module_level_regions(model, inputs, device, iters):
    """The fallback when torch.fx cannot trace: normalization and Linear
    modules, their values captured by forward hooks."""
    regions = mp.module_regions(model)
    values = module_values(model, inputs, regions)
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


def signature_regions(model, inputs):
    """(root, fx graph or None, [(region, values)], note): the signature
    regions that claim their nodes (patterns.claimable), by torch.fx when
    it traces the model, by module otherwise. Not timed here: the captured
    run times them."""
    try:
        gm = mp.trace(model)
        rec = Recorder(gm)
        with torch.no_grad():
            rec.run(*inputs)
        return gm, gm, [(r, rec.values) for r in mp.find_regions(gm) if mp.claimable(r)], ""
    except Exception as e:  # noqa: BLE001 - data-dependent control flow, math on sizes
        regions = [r for r in mp.module_regions(model) if mp.claimable(r)]
        values = module_values(model, inputs, regions)
        note = "torch.fx could not trace the model (%s: %s): its signature regions are found by module" % (
            type(e).__name__, str(e)[:200])
        return model, None, [(r, v) for r, v in zip(regions, values) if "x" in v], note


def _profile_events(cap, inputs, device, iters, how):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    cap.labelled(how)
    try:
        with torch.no_grad():
            cap.compiled(*inputs)
            _sync(device)
            cap.reset_calls()
            with profile(activities=acts) as prof:
                for _ in range(iters):
                    with torch.profiler.record_function("kvf"):
                        cap.compiled(*inputs)
                _sync(device)
    finally:
        cap.labelled("")
    return host_events(prof)


def _event_us(e, device, iters):
    """Per forward: device time of the kernels a label launched on a GPU;
    on the CPU, a node's operators (not the label's own cost), or a
    graph's or forward's whole span."""
    if device.type == "cuda":
        t = e.device_time_total
    elif e.name.startswith("kvn:"):
        t = e.cpu_time_total - e.self_cpu_time_total
    else:
        t = e.cpu_time_total
    return t / iters


def captured_times(cap, inputs, device, iters):
    """(node_us {(graph, node name): us}, graph_us {graph: us}, forward_us,
    calls {graph: calls a forward}) of the captured model, per forward."""
    node_us = {}
    for e in _profile_events(cap, inputs, device, iters, "nodes"):
        if e.name.startswith("kvn:"):
            _, g, name = e.name.split(":", 2)
            node_us[(int(g), name)] = node_us.get((int(g), name), 0.0) + _event_us(e, device, iters)
    graph_us, fwd = {}, 0.0
    for e in _profile_events(cap, inputs, device, iters, "graph"):
        if e.name == "kvf":
            fwd += _event_us(e, device, iters)
        elif e.name.startswith("kvg:"):
            g = int(e.name[4:])
            graph_us[g] = graph_us.get(g, 0.0) + _event_us(e, device, iters)
    calls = {g.index: g.calls / iters for g in cap.graphs}
    return node_us, graph_us, fwd, calls


def fit_to_graphs(node_us, graph_us):
    """Node times scaled down, graph by graph, where they add up to more
    than the graph's own run: on a CPU each labelled operator carries the
    profiler's cost, tens of µs beside a small op's few, which would
    otherwise inflate the regions against the glue and the uncaptured
    time. Proportions between nodes stay; device time is not inflated, so
    on a GPU this rarely applies."""
    sums = {}
    for (g, _), t in node_us.items():
        sums[g] = sums.get(g, 0.0) + t
    scale = {g: graph_us[g] / t for g, t in sums.items() if graph_us.get(g, 0.0) > 0 and t > graph_us[g]}
    return {k: t * scale.get(k[0], 1.0) for k, t in node_us.items()}


def partitioned(cap, fx_gm, sig):
    """{graph index: [partition.Region]}, the signature regions' nodes
    claimed first in each graph."""
    out = {}
    regions = [r for r, _ in sig]
    for g in cap.graphs:
        pre = [("sig%d" % i, nodes) for i, nodes in claims.claims(g.gm, g.qualname, fx_gm, regions)]
        out[g.index] = partition.partition(g.gm, pre=pre)
    return out


class Attribution:
    """Where the profiled forward's time went, from one run: the regions'
    time, the glue between them inside the captured graphs (views, the
    interpreter, what no region holds) and what was not captured (eager
    Python between graph breaks, Dynamo's guards). The parts add up to the
    total."""

    def __init__(self, regions_us, graph_us, profiled_fwd_us):
        captured = sum(graph_us.values())
        self.regions = regions_us
        self.glue = max(captured - regions_us, 0.0)
        self.uncaptured = max(profiled_fwd_us - captured, 0.0)
        self.total = self.regions + self.glue + self.uncaptured


def _sig_rows(root, sig, claimed_us, claimed_calls, total, out_dir, model_file):
    """Rows of the signature regions found in a captured graph (one that
    was not is a later layer of a graph Dynamo reused: its time is its
    first layer's row's, whose calls count it). Layers with the same
    signature, shapes, dtype and constants are one row and one problem."""
    from whole_model import extract as model_extract
    rows, by_key = [], {}
    for i, (r, values) in enumerate(sig):
        if i not in claimed_us:
            continue
        row = model_extract.describe(root, values, r, len(rows), claimed_us[i], total, out_dir, model_file)
        row.update(kind="signature", calls=max(int(round(claimed_calls[i])), 1))
        key = json.dumps([row["sig"], row["shapes"], row["dtype"], row["init"]], sort_keys=True, default=str)
        first = by_key.get(key)
        if first is None:
            by_key[key] = row
            rows.append(row)
            continue
        for k in ("time_us", "share", "calls"):
            first[k] += row[k]
        base = os.path.splitext(row["problem_file"])[0]
        for ext in (".py", ".pt"):
            if os.path.exists(base + ext):
                os.remove(base + ext)
    return rows


def _generic_groups(cap, parts, node_us, calls):
    """Unclaimed regions with compute, the same problem across graphs and
    layers as one: [(graph, region, op key, time_us, calls)]."""
    groups, order = {}, []
    for g in cap.graphs:
        meta = {n: partition.tensor_meta(v) for n, v in g.values.items()}
        for r in parts[g.index]:
            if r.pre is not None or not r.compute(g.gm):
                continue
            t = sum(node_us.get((g.index, n.name), 0.0) for n in r.nodes)
            key = partition.op_key(g.gm, r, meta)
            if key not in groups:
                groups[key] = [g, r, key, 0.0, 0.0]
                order.append(key)
            groups[key][3] += t
            groups[key][4] += calls.get(g.index, 1.0)
    return [tuple(groups[k]) for k in order]


def captured_profile(model, inputs, device, iters, out_dir, model_file, ctx):
    """The profile from a Dynamo capture (whole_model.capture), partitioned
    (whole_model.partition), or None when Dynamo captured nothing."""
    root, fx_gm, sig, note = signature_regions(model, inputs)
    cap = capture.capture(model, inputs)
    if not cap.graphs:
        return None
    parts = partitioned(cap, fx_gm, sig)
    node_us, graph_us, prof_fwd, calls = captured_times(cap, inputs, device, iters)
    node_us = fit_to_graphs(node_us, graph_us)
    claimed_us, claimed_calls = {}, {}
    for g in cap.graphs:
        for r in parts[g.index]:
            if r.pre is not None:
                i = int(r.pre[3:])
                claimed_us[i] = claimed_us.get(i, 0.0) + sum(node_us.get((g.index, n.name), 0.0) for n in r.nodes)
                claimed_calls[i] = claimed_calls.get(i, 0.0) + calls.get(g.index, 1.0)
    generic = _generic_groups(cap, parts, node_us, calls)
    regions_us = sum(claimed_us.values()) + sum(t for _, _, _, t, _ in generic)
    att = Attribution(regions_us, graph_us, prof_fwd)
    ctx.progress("extracting", 2, 3)
    os.makedirs(out_dir, exist_ok=True)
    rows = _sig_rows(root, sig, claimed_us, claimed_calls, att.total, out_dir, model_file)
    nodes = []
    for g, r, key, t, n_calls in generic:
        try:
            rows.append(regionsrc.describe(g, r, key, len(rows), t, max(int(round(n_calls)), 1), att.total, out_dir, model_file))
        except regionsrc.Unrenderable as e:
            nodes.append({"name": r.name, "target": "not extracted: %s" % e, "time_us": t, "share": t / att.total})
    notes = [note] if note else []
    if cap.breaks:
        causes = list(dict.fromkeys(b["cause"] for b in cap.breaks))
        notes.append("TorchDynamo broke the graph (%s): %.0f%% of the forward ran outside its %d captured graph(s)" % (
            "; ".join(causes), 100 * att.uncaptured / att.total if att.total else 0, len(cap.graphs)))
    return {"regions": rows, "nodes": nodes, "total_us": att.total, "attributed_us": regions_us, "note": " ".join(notes),
            "capture": {"graphs": len(cap.graphs), "graph_calls": [calls.get(g.index, 0.0) for g in cap.graphs],
                        "breaks": cap.breaks, "regions_us": att.regions, "glue_us": att.glue,
                        "not_captured_us": att.uncaptured, "profiled_forward_us": prof_fwd}}


def legacy_profile(model, inputs, fwd, device, iters, out_dir, model_file):
    """The profile without Dynamo: torch.fx regions, or modules."""
    note = ""
    try:
        root, found, others = fx_regions(model, inputs, device, iters)
    except Exception as e:  # noqa: BLE001 - data-dependent control flow, math on sizes
        note = "torch.fx could not trace the model (%s: %s): normalization and Linear modules only, no chains" % (type(e).__name__, str(e)[:200])
        root, found, others = module_level_regions(model, inputs, device, iters)
    attributed = sum(t for _, _, t in found) + sum(t for _, _, t in others)
    total = max(fwd, attributed)
    os.makedirs(out_dir, exist_ok=True)
    from whole_model import extract as model_extract
    regions = [model_extract.describe(root, values, r, i, t, total, out_dir, model_file)
               for i, (r, values, t) in enumerate(found)]
    nodes = [{"name": n, "target": tg, "time_us": t, "share": t / total} for n, tg, t in others]
    return {"regions": regions, "nodes": nodes, "total_us": total, "attributed_us": attributed, "note": note}


def main(args, ctx):
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    device = torch.device(args.get("device") or "cpu")
    iters = int(args.get("iters") or 10)
    ctx.progress("loading", 0, 3)
    mod, model, inputs = load_model(args["model_file"], device)
    ctx.progress("profiling", 1, 3)
    fwd = forward_time_us(model, inputs, device, iters)
    res, why = None, ""
    try:
        res = captured_profile(model, inputs, device, iters, args["out_dir"], args["model_file"], ctx)
    except Exception as e:  # noqa: BLE001 - reported; the profile falls back to torch.fx
        why = "TorchDynamo could not capture the model (%s: %s)" % (type(e).__name__, str(e)[:300])
    if res is None:
        res = legacy_profile(model, inputs, fwd, device, iters, args["out_dir"], args["model_file"])
        res["note"] = " ".join(x for x in (why or "TorchDynamo captured no graph", res["note"]) if x)
    res.update({"device": str(device), "arch": mp.device_arch(device), "forward_us": fwd,
                "time_basis": "device time of each node's kernels" if device.type == "cuda" else "CPU time of each node's operators"})
    return res

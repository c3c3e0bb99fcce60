"""Writes one partitioned region of a captured graph (whole_model.partition)
as a KernelBench-format problem: the region's own operators as Python (the
code torch.fx generates for the cut-out subgraph), the model's weights and
buffers as constructor arguments loaded from a data file beside it, and
get_inputs() with each activation's shape, strides and dtype (fresh random
values with the observed mean and spread; integer and bool activations, such
as masks and indices, exactly as seen)."""
import math
import os
import re

import torch

from whole_model import extract as model_extract
from whole_model import partition as pt

_HEADER = '''"""Extracted by kevolve-mcp optimize from %(model)s: %(name)s (%(kind)s) in
captured graph %(graph)d, %(calls)d call(s) a forward, nodes %(nodes)s.
Inputs %(shapes)s. Weights are the model's own (%(data)s)."""
import os

import torch
import torch.nn as nn
%(imports)s

%(data_loader)s

# The region's inputs in order: ("act", shape, stride, dtype, mean, std) a
# fresh activation, ("data", key) an activation kept as seen, ("w", i) the
# i-th constructor argument (a weight).
_INPUTS = %(inputs)r
_WEIGHTS = %(weights)r


def _region(%(params)s):
%(body)s


class Model(nn.Module):
    def __init__(self, *weights):
        super().__init__()
        for i, w in enumerate(weights):
            self.register_buffer("w%%d" %% i, w)

    def forward(self, *acts):
        args, k = [], 0
        for spec in _INPUTS:
            if spec[0] == "w":
                args.append(getattr(self, "w%%d" %% spec[1]))
            else:
                args.append(acts[k])
                k += 1
        return _region(*args)


def get_inputs():
    out = []
    for spec in _INPUTS:
        if spec[0] == "data":
            out.append(_data()[spec[1]].clone())
        elif spec[0] == "act":
            _, shape, stride, dtype, mean, std = spec
            dt = getattr(torch, dtype)
            t = torch.empty_strided(shape, stride, dtype=dt)
            t.copy_((mean + std * torch.randn(*shape)).to(dt))
            out.append(t)
    return out


def get_init_inputs():
    return [_data()[k] for k in _WEIGHTS]
'''


class Unrenderable(Exception):
    """A region whose inputs or operators cannot be written as a problem."""


def _imports(globals_, body):
    """Import lines for the names the generated body uses (torch.fx lists
    more globals than a region's code needs)."""
    lines = []
    for name, obj in sorted(globals_.items()):
        if name in ("torch",) or not re.search(r"\b%s\b" % re.escape(name), body):
            continue
        if isinstance(obj, type(os)):
            lines.append("import %s as %s" % (obj.__name__, name) if obj.__name__ != name else "import %s" % name)
            continue
        if name in ("inf", "nan"):
            lines.append("from math import %s" % name)
            continue
        if isinstance(obj, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
            lines.append("%s = %s" % (name, _torch_attr(obj)))
            continue
        mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if not mod or not qual or "<" in qual:
            raise Unrenderable("global %s (%r) has no importable name" % (name, obj))
        lines.append("from %s import %s as %s" % (mod, qual, name) if "." not in qual else
                     "import %s as _m_%s\n%s = _m_%s.%s" % (mod, name, name, name, qual))
    return "\n".join(lines)


def _torch_attr(obj):
    if isinstance(obj, torch.device):
        return "torch.device(%r)" % str(obj)
    return "torch." + str(obj).replace("torch.", "")


def _spec(v):
    f = v.detach().float()
    std = float(f.std()) if f.numel() > 1 else 0.0
    return (tuple(v.shape), tuple(v.stride()), str(v.dtype).replace("torch.", ""),
            round(float(f.mean()), 4) if f.numel() else 0.0, round(std if math.isfinite(std) and std > 0 else 1.0, 4))


def render(cap_graph, region, calls, model_file, data_name):
    """(source, data dict, input meta [(shape, dtype)], input specs) of a
    region's problem."""
    gm = cap_graph.gm
    sub = pt.subgraph(gm, region, root=torch.nn.Module())
    code = sub.graph.python_code(root_module="self")
    src = code.src.strip("\n")
    head, _, body = src.partition("\n")
    if not head.startswith("def forward(self"):
        raise Unrenderable("unexpected generated code: " + head)
    params = head[len("def forward(self"):].lstrip(", ").rstrip("):").strip()
    data, inputs, weights, meta = {}, [], [], []
    for i, a in enumerate(region.inputs()):
        v = cap_graph.values.get(a)
        if not isinstance(v, torch.Tensor):
            raise Unrenderable("input %s is a %s, not a tensor" % (a.name, type(v).__name__))
        meta.append((tuple(v.shape), v.dtype))
        if cap_graph.is_weight(a) or a.op == "get_attr":
            key = "w%d_%s" % (i, a.name)
            data[key] = v.detach().cpu().clone()
            inputs.append(("w", len(weights)))
            weights.append(key)
        elif v.dtype.is_floating_point and v.numel() > 0:
            inputs.append(("act",) + _spec(v))
        else:
            key = "a%d_%s" % (i, a.name)
            data[key] = v.detach().cpu().clone()
            inputs.append(("data", key))
    src = _HEADER % dict(model=os.path.basename(model_file), name=region.name, kind=region.kind, graph=cap_graph.index,
                         calls=calls, nodes=", ".join(n.name for n in region.nodes[:8]) +
                         (", ..." if len(region.nodes) > 8 else ""),
                         shapes=", ".join(str(list(s)) for s, _ in meta), imports=_imports(code.globals, body),
                         data=data_name, data_loader=model_extract.data_loader(data_name if data else None),
                         inputs=inputs, weights=weights, params=params,
                         body=body)
    return src, data, meta, inputs


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _nbytes(v):
    if not isinstance(v, torch.Tensor):
        return 0
    return v.numel() * v.element_size()


def node_flops(gm, n, values):
    """FLOPs of one node at the speed of light: 2MNK for a GEMM (and each
    of attention's two), a few per element for the rest."""
    v = values.get(n)
    out = v.numel() if isinstance(v, torch.Tensor) else 0
    name = pt.op_name(gm, n)
    ins = [values.get(a) for a in n.all_input_nodes]
    ins = [x for x in ins if isinstance(x, torch.Tensor)]
    if name in ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm") and ins:
        k = ins[0].shape[-1] if name != "addmm" or len(ins) < 2 else ins[1].shape[-1]
        return 2.0 * out * k
    if name.startswith("conv") and len(ins) >= 2:
        w = ins[1]
        return 2.0 * out * _numel(w.shape[1:])
    if name == "scaled_dot_product_attention" and len(ins) >= 3:
        q, k = ins[0], ins[1]
        return 4.0 * _numel(q.shape[:-1]) * k.shape[-2] * q.shape[-1]
    return 2.0 * out if pt.kind(gm, n) not in ("view", "") else 0.0


def region_work(cap_graph, region):
    """(flops, bytes): every input read once, every output written once."""
    gm, values = cap_graph.gm, cap_graph.values
    byts = sum(_nbytes(values.get(a)) for a in region.inputs()) + sum(_nbytes(values.get(o)) for o in region.outputs())
    return sum(node_flops(gm, n, values) for n in region.nodes), float(byts)


def describe(cap_graph, region, key, index, time_us, calls, total_us, out_dir, model_file):
    """Writes the region's problem into out_dir and returns its row (the
    same fields as whole_model.extract.describe, plus kind and calls).
    time_us is all its calls' in a forward; flops and bytes one call's.
    key (partition.op_key) is what a kernel for it deploys under; init
    says which of its inputs are weights ("w") and which activations
    ("act"), the order the runtime passes them in."""
    base = "%02d_%s" % (index, region.name)
    src, data, meta, specs = render(cap_graph, region, calls, model_file, base + ".pt")
    path = os.path.join(out_dir, base + ".py")
    with open(path, "w") as f:
        f.write(src)
    if data:
        torch.save(data, os.path.join(out_dir, base + ".pt"))
    flops, byts = region_work(cap_graph, region)
    roles = ["w" if spec[0] == "w" else "act" for spec in specs]
    return {"sig": region.name, "op": key, "kind": region.kind, "where": "graph %d: %s" % (cap_graph.index, region.nodes[0].name),
            "nodes": [n.name for n in region.nodes], "bundled": "", "calls": calls,
            "shapes": [list(s) for s, _ in meta], "dtype": str(meta[0][1]).replace("torch.", "") if meta else "",
            "init": roles, "time_us": time_us, "share": time_us / total_us if total_us else 0.0,
            "flops": flops, "bytes": byts, "problem_file": path}

"""Writes one region of a model (whole_model.patterns) as a KernelBench-format
problem: Model with the region's signature, get_inputs() with the shapes
and dtypes the region saw (activations fresh random with the observed mean
and spread; the model's weights loaded from a data file beside the
problem), get_init_inputs() with its constants and weights."""
import os

import torch

from whole_model import patterns as mp

_HEADER = '''"""Extracted by kevolve-mcp optimize from %(model)s: %(sig)s at %(where)s.
Inputs %(shapes)s, %(dtype)s. Weights are the model's own (%(data)s)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

%(data_loader)s

# (name, shape, dtype, mean, std) of a fresh activation; a str names a weight.
_INPUTS = %(inputs)r
_INIT = %(init)r


class Model(nn.Module):
    def __init__(self%(init_params)s):
        super().__init__()
%(init_body)s

    def forward(self, %(args)s):
%(body)s


def get_inputs():
    out = []
    for spec in _INPUTS:
        if isinstance(spec, str):
            out.append(_data()[spec].clone())
            continue
        _, shape, dtype, mean, std = spec
        dt = getattr(torch, dtype)
        if dt.is_floating_point:
            out.append((mean + std * torch.randn(*shape)).to(dt))
        else:
            out.append(torch.randint(int(mean), int(std) + 1, shape, dtype=dt))
    return out


def get_init_inputs():
    return [_data()[v] if isinstance(v, str) else v for v in _INIT]
'''


_DATA_LOADER = '''_DATA_FILE = %r


def _data():
    """The weights and kept inputs, read from the data file beside this one
    when first asked (a kernel that copies this file needs no data file)."""
    if _DATA_FILE is None:
        return {}
    return torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), _DATA_FILE), weights_only=True)
'''


def data_loader(data_name):
    """The lines of a problem file that read its data file (data_name, or
    None where it has none), lazily: both kinds of problem use them."""
    return _DATA_LOADER % data_name


def _indent(s, n):
    return "\n".join(" " * n + line for line in s.splitlines())


def _node_spec(name, v):
    if v.dtype.is_floating_point:
        f = v.detach().float()
        return (name, tuple(v.shape), str(v.dtype).replace("torch.", ""), round(float(f.mean()), 4), round(float(f.std()) or 1.0, 4))
    return (name, tuple(v.shape), str(v.dtype).replace("torch.", ""), int(v.min()), int(v.max()))


def render(gm, values, region, model_file, data_name):
    """(source, data dict, call meta) of a region's problem. values holds the
    region's input and output values from a real forward (by graph node, or
    "x" and "out" for a module-level region)."""
    sig = mp.SIGS[region.sig]
    data, inputs, meta = {}, [], []
    for name, (kind, ref) in zip(sig["args"], region.call):
        if kind == "node":
            v = values[ref]
            inputs.append(_node_spec(name, v))
        else:
            v = mp.tensor_of(gm, region, (kind, ref)).detach().cpu().clone()
            data[name] = v
            inputs.append(name)
        meta.append((tuple(v.shape), v.dtype))
    init = []
    for name, v in zip(sig["init"], mp.resolved_init(region, meta[0][1])):
        if isinstance(v, tuple):
            data[name] = mp.tensor_of(gm, region, v).detach().cpu().clone()
            init.append(name)
        else:
            init.append(v)
    init_body = "\n".join(
        ("        self.%s = nn.Parameter(%s, requires_grad=False)" if isinstance(v, str) else "        self.%s = %s")
        % (n, n) for n, v in zip(sig["init"], init)) or "        pass"
    dtype = str(meta[0][1]).replace("torch.", "")
    src = _HEADER % dict(model=os.path.basename(model_file), sig=region.sig, where=region.where,
                         shapes=", ".join(str(list(s)) for s, _ in meta), dtype=dtype,
                         data=data_name, data_loader=data_loader(data_name if data else None), inputs=inputs, init=init,
                         init_params="".join(", " + n for n in sig["init"]), init_body=init_body,
                         args=", ".join(sig["args"]), body=_indent(sig["body"], 8))
    return src, data, meta


def describe(gm, values, region, index, time_us, total_us, out_dir, model_file):
    """Writes the region's problem (and its data) into out_dir and returns
    its row: signature, bundled operator, shapes, dtype, work, time."""
    base = "%02d_%s" % (index, region.sig)
    src, data, meta = render(gm, values, region, model_file, base + ".pt")
    path = os.path.join(out_dir, base + ".py")
    with open(path, "w") as f:
        f.write(src)
    if data:
        torch.save(data, os.path.join(out_dir, base + ".pt"))
    out_v = values[region.out]
    flops, byts = region_work(region, meta, (tuple(out_v.shape), out_v.dtype))
    return {"sig": region.sig, "where": region.where, "nodes": [n.name for n in region.nodes] or [region.where],
            "bundled": mp.SIGS[region.sig].get("bundled", ""),
            "shapes": [list(s) for s, _ in meta], "dtype": str(meta[0][1]).replace("torch.", ""),
            "init": [_init_value(gm, region, v) for v in mp.resolved_init(region, meta[0][1])],
            "time_us": time_us, "share": time_us / total_us if total_us else 0.0,
            "flops": flops, "bytes": byts, "problem_file": path}


def _init_value(gm, region, v):
    """A constructor argument as the registry keeps it: a number, or a
    weight's name and shape (the guard serves another layer's weight only
    where its shape is the one the kernel was verified with)."""
    if not isinstance(v, tuple):
        return v
    return {"param": v[1], "shape": list(mp.tensor_of(gm, region, v).shape)}


def _bytes(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    return n * (torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 8)


def region_work(region, call_meta, out_meta):
    """(flops, bytes) at the speed of light: every tensor read once, the
    output written once; GEMM flops 2MNK, elementwise a few per element."""
    byts = sum(_bytes(s, d) for s, d in call_meta) + _bytes(*out_meta)
    numel = 1
    for s in out_meta[0]:
        numel *= s
    flops = 5.0 * numel
    if region.sig.startswith("linear") or region.sig == "gemm_bias_gelu":
        flops += 2.0 * numel * call_meta[0][0][-1]
    return flops, float(byts)

"""Deployment through TorchDynamo (kevolve_kernels.patch when the registry
holds kernels for regions the optimizer cut from captured graphs).

The model is compiled with a backend that sees each graph TorchDynamo
captures, finds the regions exactly as the optimizer's profile did (the
signature regions' nodes claimed first, _claims.py; the rest partitioned,
_partition.py: copies of the worker's files) and replaces each region a
registry entry serves by one call to a PyTorch custom op,
kevolve_kernels::e_<entry id>. The op runs the entry's kernel where its
guard holds (the shapes, dtype, constants and arch it was verified on, no
gradient needed) and the region's own operators otherwise; its fake
implementation is those operators, so torch.compile (Inductor) and
torch.library.opcheck see an ordinary op. Run as captured (no Inductor),
the graph calls the kernel directly, without the dispatcher's cost. Under
a profiler every kernel call runs inside a label of the op's name, so a
trace shows which kernels ran (the engagement check)."""
import heapq
import importlib.util
import operator
import os
import sys

import torch

from . import _claims
from . import _partition as pt
from . import _patterns as mp
from ._dispatch import init_matches

# Entry id -> {"op", "where", "hits", "fallbacks"}: what each op did.
STATS = {}
_OPS = {}


def _load(path, init):
    name = "kevolve_kernels_k_" + os.path.splitext(os.path.basename(path))[0]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name].ModelNew(*init).eval()


class _Served:
    """One region's way from the op's arguments (the region's inputs in
    graph order) to its kernel's constructor and call arguments."""

    def __init__(self, entry, base, fallback, plan):
        self.entry, self.base, self.fallback, self.plan = entry, base, fallback, plan
        self.kernels = {}
        self.decided = {}

    def decide(self, args):
        """(call, init) of these arguments where guard passes; whether it
        passes is kept per (gradient needed, each argument's shape, dtype
        and device), all it depends on, so after a graph's first call the
        decision is a dictionary lookup."""
        grad = torch.is_grad_enabled() and any(a.requires_grad for a in args if a is not None)
        key = (grad,) + tuple((tuple(a.shape), a.dtype, a.device) if a is not None else None for a in args)
        ok = self.decided.get(key)
        if ok is None:
            ok = self.decided[key] = not grad and self.guard(args) is not None
        return self.plan(args) if ok else None

    def guard(self, args):
        """(call, init) when the entry serves these arguments, else None."""
        if any(a is None for a in args):
            return None
        if torch.is_grad_enabled() and any(a.requires_grad for a in args):
            return None
        call, init = self.plan(args)
        if not call or any(not isinstance(a, torch.Tensor) for a in call):
            return None
        e, first = self.entry, call[0]
        generic = "#" in e["op"]
        shaped = args if generic else call
        if any(a.device != first.device for a in shaped) or [list(a.shape) for a in shaped] != e["shapes"]:
            return None
        if str(shaped[0].dtype).replace("torch.", "") != e["dtype"] or mp.device_arch(first.device) != e["arch"]:
            return None
        if not generic and not init_matches(init, e["init"]):
            return None
        return call, init

    def __call__(self, args):
        st = STATS[self.entry["id"]]
        g = self.decide(args)
        if g is None:
            st["fallbacks"] += 1
            out = self.fallback(*args)
            return list(out) if isinstance(out, (tuple, list)) else [out]
        call, init = g
        key = tuple(v.data_ptr() if isinstance(v, torch.Tensor) else v for v in init)
        k = self.kernels.get(key)
        if k is None:
            k = self.kernels[key] = _load(os.path.join(self.base, self.entry["kernel"]), init)
        st["hits"] += 1
        if torch.autograd.profiler._is_profiler_enabled:
            # The label is what the engagement check looks for in a trace
            # (tens of µs a call, so only under a profiler).
            with torch.profiler.record_function("kevolve_kernels::e_" + self.entry["id"]):
                out = k(*call)
        else:
            out = k(*call)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o.clone() if any(o.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for a in args
                                 if isinstance(a, torch.Tensor)) else o for o in out]


def _custom_op(served):
    """The entry's custom op (one per entry a process; the first region it
    served gives its fallback, the same computation for every region of
    the same op key)."""
    eid = served.entry["id"]
    if eid in _OPS:
        return _OPS[eid]
    name = "kevolve_kernels::e_" + eid

    def impl(args: list[torch.Tensor]) -> list[torch.Tensor]:
        return served(args)

    op = torch.library.custom_op(name, impl, mutates_args=())

    def fake(args):
        out = served.fallback(*args)
        return [o.clone() for o in (out if isinstance(out, (tuple, list)) else [out])]

    op.register_fake(fake)
    STATS.setdefault(eid, {"op": served.entry["op"], "where": "", "hits": 0, "fallbacks": 0})
    _OPS[eid] = getattr(torch.ops.kevolve_kernels, "e_" + eid).default
    return _OPS[eid]


def _direct(served):
    def run(args):
        return served(args)
    run.__name__ = run.__qualname__ = "kevolve_e_" + served.entry["id"]
    return run


def _replace(gm, region, op):
    """The region's nodes become one call of op (its inputs in a list) and
    a getitem per output; the graph is then put back in an order where
    every node follows its inputs (an outside user of an early output may
    sit before the region's last node)."""
    inside = set(region.nodes)
    outs = region.outputs()
    with gm.graph.inserting_after(region.nodes[-1]):
        call = gm.graph.call_function(op, (list(region.inputs()),))
    prev = call
    for i, o in enumerate(outs):
        with gm.graph.inserting_after(prev):
            prev = gm.graph.call_function(operator.getitem, (call, i))
        prev.meta.update({k: v for k, v in o.meta.items() if k in ("example_value", "val", "tensor_meta")})
        o.replace_all_uses_with(prev, delete_user_cb=lambda u: u not in inside)
    for n in reversed(region.nodes):
        gm.graph.erase_node(n)
    _toposort(gm.graph)


def _toposort(graph):
    """Reorders graph stably: each node after its inputs, otherwise in its
    old order."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    waiting = {n: len(n.all_input_nodes) for n in nodes}
    ready = [(index[n], n.name) for n in nodes if waiting[n] == 0]
    by_name = {n.name: n for n in nodes}
    heapq.heapify(ready)
    order = []
    while ready:
        n = by_name[heapq.heappop(ready)[1]]
        order.append(n)
        for u in n.users:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (index[u], u.name))
    for a, b in zip(order, order[1:]):
        a.append(b)


def _generic_plan(entry):
    roles = entry["init"]

    def plan(args):
        if len(args) != len(roles):
            return None, []
        return [a for a, r in zip(args, roles) if r == "act"], [a for a, r in zip(args, roles) if r == "w"]
    return plan


def _signature_plan(region, inputs, qualname):
    """Maps a claimed signature region's inputs (graph order) to its
    kernel's call and constructor arguments (whole_model.patterns' call
    and init): activations in order, weights by qualified name."""
    acts = [i for i, a in enumerate(inputs) if a not in qualname]
    by_q = {qualname[a]: i for i, a in enumerate(inputs) if a in qualname}

    def ref(kind, v, args, k):
        if kind == "node":
            return args[acts[k]] if k < len(acts) else None
        q = v if kind == "param" else region.where + "." + v
        return args[by_q[q]] if q in by_q else None

    def plan(args):
        call, k = [], 0
        for kind, v in region.call:
            call.append(ref(kind, v, args, k))
            k += kind == "node"
        dtype = call[0].dtype if call and isinstance(call[0], torch.Tensor) else torch.float32
        init = [ref(x[0], x[1], args, 0) if isinstance(x, tuple) else x for x in mp.resolved_init(region, dtype)]
        return call, init
    return plan


class Backend:
    """The TorchDynamo backend: regions replaced by ops, the rest run as
    captured (or by Inductor, with inductor=True)."""

    def __init__(self, model, entries, base, inductor=False):
        self.entries, self.base, self.inductor = entries, base, inductor
        self.named = {id(t): q for q, t in list(model.named_parameters()) + list(model.named_buffers())}
        try:
            self.fx_gm = mp.trace(model)
            sig = mp.find_regions(self.fx_gm)
        except Exception:  # noqa: BLE001 - not traceable: modules, as the optimizer did
            self.fx_gm, sig = None, mp.module_regions(model)
        self.sig = [r for r in sig if mp.claimable(r)]
        self.by_op = {}
        for e in entries:
            self.by_op.setdefault(e["op"], []).append(e)

    def __call__(self, gm, example_inputs):
        if not torch.is_grad_enabled() or not any(getattr(a, "requires_grad", False) for a in example_inputs):
            self._rewrite(gm, example_inputs)
        if self.inductor:
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        return gm.forward

    def _rewrite(self, gm, example_inputs):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        qualname = {n: self.named[id(a)] for n, a in zip(placeholders, example_inputs)
                    if isinstance(a, torch.Tensor) and id(a) in self.named}
        pre = [("sig%d" % i, nodes) for i, nodes in _claims.claims(gm, qualname, self.fx_gm, self.sig)]
        meta = {n: pt.tensor_meta(n.meta.get("example_value")) for n in gm.graph.nodes}
        chosen = []
        for r in pt.partition(gm, pre=pre):
            served = self._serve(gm, r, meta, qualname)
            if served is not None:
                chosen.append((r, served))
        # Every region is decided on the captured graph before any is
        # replaced: a replaced region's outputs become new nodes.
        for r, served in chosen:
            op = _custom_op(served)
            # Inductor lowers the op (its fake implementation gives the
            # shapes); the captured graph run as it is calls the kernel
            # directly, without the dispatcher's tens of µs a call.
            _replace(gm, r, op if self.inductor else _direct(served))
            STATS[served.entry["id"]]["where"] = r.nodes[0].name
        gm.graph.lint()
        gm.recompile()

    def _serve(self, gm, r, meta, qualname):
        """The entry that serves region r at the shapes it was captured
        with, as a _Served, or None."""
        if not r.compute(gm):
            return None
        if r.pre is not None:
            sig = self.sig[int(r.pre[3:])]
            op, plan = sig.sig, _signature_plan(sig, r.inputs(), qualname)
        else:
            op, plan = pt.op_key(gm, r, meta), None
        for e in self.by_op.get(op, []):
            served = _Served(e, self.base, pt.subgraph(gm, r), plan or _generic_plan(e))
            if served.guard([meta_value(a) for a in r.inputs()]) is not None:
                return served
        return None


def meta_value(n):
    v = n.meta.get("example_value")
    return v if isinstance(v, torch.Tensor) else None


def compile_model(model, entries, base, inductor=False):
    """The model compiled with Backend (the model itself is not changed)."""
    return torch.compile(model, backend=Backend(model, entries, base, inductor), dynamic=False)


def stats():
    return [dict(op=s["op"], where=s["where"], hits=s["hits"], fallbacks=s["fallbacks"], entry=eid) for eid, s in STATS.items()]

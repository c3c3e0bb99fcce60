"""Splits a captured graph (whole_model.capture) into fusible regions, the
way an Inductor-style scheduler groups work into kernels, instead of
matching a list of patterns:

- attention written out (matmul, scale, mask, softmax, dropout, matmul) or
  scaled_dot_product_attention, with the views that feed and follow it;
- a GEMM or convolution with its pointwise epilogue;
- a normalization or other reduction with the pointwise work before it (a
  residual add) and after it;
- chains of pointwise work.

Views (view, transpose, getitem of a split, ...) join the region that
consumes or produces them. Every region is convex (no path leaves it and
comes back), so it can be cut out as one function of its inputs. Nodes a
caller has already claimed (pre, e.g. the signature regions the deploy
runtime knows) form regions of their own and are never merged."""
import hashlib
import operator

import torch
import torch.fx as fx

GEMM = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "conv1d", "conv2d", "conv3d",
        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "_convolution", "addmv", "mv",
        "tensordot", "conv", "convtranspose1d", "convtranspose2d", "convtranspose3d", "conv1d_module", "conv2d_module"}
ATTENTION = {"scaled_dot_product_attention", "multi_head_attention_forward", "multiheadattention"}
REDUCTION = {"softmax", "log_softmax", "_softmax", "layer_norm", "group_norm", "batch_norm", "instance_norm",
             "rms_norm", "sum", "mean", "amax", "amin", "max", "min", "var", "std", "var_mean", "std_mean", "norm",
             "logsumexp", "cumsum", "cumprod", "prod", "argmax", "argmin", "normalize", "avg_pool1d", "avg_pool2d",
             "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
             "adaptive_avg_pool3d", "adaptive_max_pool2d", "layernorm", "batchnorm1d", "batchnorm2d", "batchnorm3d",
             "groupnorm", "rmsnorm", "softmax_module", "all", "any", "topk", "sort"}
VIEW = {"getitem", "view", "reshape", "transpose", "permute", "contiguous", "split", "chunk", "unsqueeze", "squeeze",
        "flatten", "expand", "expand_as", "t", "size", "narrow", "unbind", "select", "movedim", "unflatten",
        "view_as", "split_with_sizes", "dim", "numel", "detach", "clone", "identity", "dropout", "alias"}
_SOFTMAX = {"softmax", "_softmax", "log_softmax"}
_MATMUL = {"matmul", "bmm", "baddbmm"}


def op_name(gm, n):
    """The operator a node calls, in one vocabulary for fx and Dynamo
    graphs: a function's or method's name without underscores around it,
    a module's class name in lower case."""
    if n.op == "call_function":
        name = getattr(n.target, "__name__", str(n.target))
    elif n.op == "call_method":
        name = str(n.target)
    elif n.op == "call_module":
        name = type(gm.get_submodule(n.target)).__name__.lower()
    else:
        return n.op
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    return name


def kind(gm, n):
    """attention, gemm, reduction, view, pointwise, or "" for a node that
    computes nothing (placeholder, output, get_attr)."""
    if n.op in ("placeholder", "output", "get_attr"):
        return ""
    name = op_name(gm, n)
    if n.op == "call_function" and n.target is operator.getitem:
        return "view"
    for k, names in (("attention", ATTENTION), ("gemm", GEMM), ("reduction", REDUCTION), ("view", VIEW)):
        if name in names:
            return k
    if n.op == "call_module":
        return "opaque"
    return "pointwise"


class Region:
    """A group of nodes (graph order) with its kind and name."""

    def __init__(self, kind, nodes, name="", pre=None):
        self.kind, self.nodes, self.name, self.pre = kind, nodes, name, pre

    def inputs(self):
        inside, out = set(self.nodes), []
        for n in self.nodes:
            for a in n.all_input_nodes:
                if a not in inside and a not in out:
                    out.append(a)
        return out

    def outputs(self):
        inside = set(self.nodes)
        return [n for n in self.nodes if any(u not in inside for u in n.users)]

    def compute(self, gm):
        return [n for n in self.nodes if kind(gm, n) not in ("view", "")]


def _main_input(n):
    """The tensor input a chain follows back: the first node argument."""
    for a in n.args:
        if hasattr(a, "op"):
            return a
    return None


class _Reach:
    """Ancestor sets as bitsets over graph order, for convexity."""

    def __init__(self, nodes):
        self.index = {n: i for i, n in enumerate(nodes)}
        self.anc = {}
        for n in nodes:
            bits = 1 << self.index[n]
            for a in n.all_input_nodes:
                bits |= self.anc.get(a, 0)
            self.anc[n] = bits

    def bits(self, group):
        b = 0
        for n in group:
            b |= 1 << self.index[n]
        return b

    def convex_with(self, group_bits, n, members):
        """group + n is convex: no input of n outside the group depends on it."""
        for a in n.all_input_nodes:
            if a not in members and self.anc[a] & group_bits:
                return False
        return True

    def convex(self, nodes):
        members = set(nodes)
        b = self.bits(nodes)
        for n in nodes:
            for a in n.all_input_nodes:
                if a not in members and self.anc[a] & b:
                    return False
        return True


def _attention_regions(gm, nodes, taken, reach):
    """Written-out attention around each softmax: a matmul before it and one
    after it, through pointwise and view nodes that feed only the chain."""
    out = []
    for s in nodes:
        if s in taken or op_name(gm, s) not in _SOFTMAX:
            continue
        chain, m1 = [s], None
        a = _main_input(s)
        while a is not None and a not in taken and kind(gm, a) in ("pointwise", "view") and len(a.users) == 1:
            chain.insert(0, a)
            a = _main_input(a)
        if a is not None and a not in taken and op_name(gm, a) in _MATMUL and len(a.users) == 1:
            m1 = a
        tail, b = [], s
        while len(b.users) == 1:
            u = next(iter(b.users))
            if u in taken:
                break
            if op_name(gm, u) in _MATMUL and u.args and u.args[0] is b:
                tail.append(u)
                break
            if kind(gm, u) not in ("pointwise", "view"):
                break
            tail.append(u)
            b = u
        if m1 is None or not tail or op_name(gm, tail[-1]) not in _MATMUL:
            continue
        group = [m1] + chain + tail
        _grow_views(gm, group, taken, reach, back=True)
        out.append(Region("attention", _ordered(group, reach), "attention"))
        taken.update(group)
    for n in nodes:
        if n not in taken and kind(gm, n) == "attention":
            group = [n]
            _grow_views(gm, group, taken, reach, back=True)
            out.append(Region("attention", _ordered(group, reach), "attention"))
            taken.update(group)
    return out


def _grow_views(gm, group, taken, reach, back):
    """Adds the views and masks that feed the group and feed nothing else
    (the q/k/v split and transposes, a causal mask's slice and compare),
    then the views that only follow its output, while it stays convex."""
    changed = True
    while changed:
        changed = False
        members = set(group)
        for n in list(group):
            for a in n.all_input_nodes:
                if a in members or a in taken or kind(gm, a) not in ("view", "pointwise"):
                    continue
                if all(u in members for u in a.users) and _cheap_prologue(gm, a):
                    group.append(a)
                    members.add(a)
                    changed = True
    while True:
        outs = [n for n in group if any(u not in set(group) for u in n.users)]
        if len(outs) != 1 or len(outs[0].users) != 1:
            break
        u = next(iter(outs[0].users))
        if u in taken or kind(gm, u) != "view" or not reach.convex(group + [u]):
            break
        group.append(u)


def _cheap_prologue(gm, a):
    """A view, or a compare/cast of something that is not an activation's
    full tensor (the causal mask's `bias[..] == 0`)."""
    return kind(gm, a) == "view" or op_name(gm, a) in ("eq", "ne", "lt", "le", "gt", "ge", "logical_not", "to", "bool", "float")


def _ordered(group, reach):
    return sorted(set(group), key=lambda n: reach.index[n])


# Which producer kinds a node of each kind may join (epilogues and
# prologues an Inductor-style scheduler fuses).
_JOINS = {
    "pointwise": ("pointwise", "view", "gemm", "reduction"),
    "view": ("pointwise", "view", "gemm", "reduction", "attention"),
    "reduction": ("pointwise", "view", "reduction"),
}


_RANK = ["view", "pointwise", "reduction", "gemm"]
_KIND_RANK = {k: i for i, k in enumerate(_RANK)}


def _siblings(n, joined, group_of, reach):
    """The other regions feeding n that can join n's region: pointwise or
    view work (a reduction too, where no GEMM is involved), at most one
    GEMM in the result, and the union convex."""
    out = []
    for a in n.all_input_nodes:
        r = group_of.get(a)
        if r is None or r is joined or r in out or r.pre is not None or r.kind not in _KIND_RANK:
            continue
        kinds = {joined.kind, r.kind}
        if (r.kind == "gemm" and joined.kind == "gemm") or ("gemm" in kinds and "reduction" in kinds):
            continue
        if reach.convex(joined.nodes + r.nodes + [m for x in out for m in x.nodes]):
            out.append(r)
    return out


def partition(gm, pre=()):
    """Regions of a graph in graph order. pre: (name, [nodes]) groups
    claimed beforehand; they stay as they are, each one region."""
    nodes = [n for n in gm.graph.nodes]
    reach = _Reach(nodes)
    taken, regions = set(), []
    for name, group in pre:
        group = [n for n in group if n not in taken]
        if group:
            regions.append(Region("signature", _ordered(group, reach), name, pre=name))
            taken.update(group)
    regions += _attention_regions(gm, nodes, taken, reach)
    group_of = {}
    for r in regions:
        for n in r.nodes:
            group_of[n] = r
    for n in nodes:
        k = kind(gm, n)
        if not k or n in taken:
            continue
        joined = None
        if k in _JOINS:
            for a in n.all_input_nodes:
                r = group_of.get(a)
                if r is None or r.pre is not None or r.kind == "attention" and k != "view":
                    continue
                if r.kind not in _JOINS[k] or (k == "reduction" and r.kind == "gemm"):
                    continue
                if reach.convex_with(reach.bits(r.nodes), n, set(r.nodes)):
                    joined = r
                    break
        if joined is None:
            joined = Region(k, [], "")
            regions.append(joined)
        joined.kind = _RANK[max(_KIND_RANK[joined.kind], _KIND_RANK.get(k, 0))]
        joined.nodes.append(n)
        group_of[n] = joined
        taken.add(n)
        for r in _siblings(n, joined, group_of, reach):
            # Two chains meeting at n (exp(x) - sigmoid(x)) are one kernel.
            joined.nodes += r.nodes
            joined.kind = _RANK[max(_KIND_RANK[joined.kind], _KIND_RANK[r.kind])]
            for m in r.nodes:
                group_of[m] = joined
            regions.remove(r)
        joined.nodes.sort(key=lambda m: reach.index[m])
    for r in regions:
        if not r.name:
            r.name = region_name(gm, r)
    return sorted(regions, key=lambda r: reach.index[r.nodes[-1]])


def region_name(gm, r):
    """attention, or the region's compute operators joined (linear_gelu,
    add_layer_norm); "view" for one that only moves data."""
    if r.kind == "attention":
        return "attention"
    names = []
    for n in r.compute(gm):
        name = op_name(gm, n)
        if name not in names:
            names.append(name)
    if not names:
        return "view"
    s = "_".join(names)
    return s if len(s) <= 40 else "_".join(names[:3]) + "_etc"


def structure_key(gm, r, meta):
    """What makes two regions the same problem: operators, arguments'
    structure, constants and the inputs' shapes, dtypes and strides (meta:
    node -> tensor_meta)."""
    index = {n: i for i, n in enumerate(r.nodes)}
    ins = r.inputs()
    pos = {a: i for i, a in enumerate(ins)}

    def arg(a):
        if hasattr(a, "op"):
            return ("n", index[a]) if a in index else ("in", pos[a], meta.get(a))
        if isinstance(a, (list, tuple)):
            return tuple(arg(x) for x in a)
        if isinstance(a, slice):
            return ("slice", arg(a.start), arg(a.stop), arg(a.step))
        if isinstance(a, torch.dtype):
            return str(a)
        return repr(a)

    return tuple((op_name(gm, n), arg(tuple(n.args)), arg(tuple(sorted(n.kwargs.items())))) for n in r.nodes) + \
        (tuple(index[o] for o in r.outputs()),)


def tensor_meta(v):
    """(shape, dtype, strides) of a value, the meta structure_key compares;
    None for a value that is not a tensor."""
    if not isinstance(v, torch.Tensor):
        return None
    return (tuple(v.shape), str(v.dtype), tuple(v.stride()))


def op_key(gm, r, meta):
    """The region's name and a hash of its structure_key: what a deployed
    kernel is registered under and what the runtime looks for in a graph
    it captures (name#hash)."""
    h = hashlib.sha256(repr(structure_key(gm, r, meta)).encode()).hexdigest()[:12]
    return "%s#%s" % (r.name, h)


def subgraph(gm, region, root=None):
    """The region as a GraphModule of its inputs (placeholders in
    region.inputs() order) returning its output, or a tuple of them (root:
    the module its get_attr and call_module nodes resolve in, gm's by
    default)."""
    g = fx.Graph()
    env = {}
    for i, a in enumerate(region.inputs()):
        env[a] = g.placeholder("in%d_%s" % (i, a.name))
    for n in region.nodes:
        env[n] = g.node_copy(n, lambda x: env[x])
    outs = region.outputs()
    g.output(env[outs[0]] if len(outs) == 1 else tuple(env[o] for o in outs))
    return fx.GraphModule(gm if root is None else root, g, "Region")

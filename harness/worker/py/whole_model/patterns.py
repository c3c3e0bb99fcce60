"""The regions of a model worth a kernel of their own, found in its torch.fx
graph: a normalization (RMSNorm, LayerNorm), an activation chain (SwiGLU
silu(gate) * up over a chunked gate/up projection, or silu(g) * u over two
projections), a GEMM with its elementwise epilogue (Linear + GELU/ReLU/...),
and a lone GEMM.

One file for two users, so they agree on what a region is: the model
profiling job (whole_model/profile.py) extracts each region as a KernelBench
problem, and the exported runtime (kevolve_kernels, which copies this file)
replaces the same regions with guarded kernels. A region names its
signature (SIGS), the tensors its kernel is called with (`call`: graph
values or parameters of the model, by qualified name) and its constructor
arguments (`init`: numbers, or parameters by name)."""
import operator

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

# Signatures: the kernel's forward arguments, its constructor arguments and
# the reference computation (the body of Model.forward). A signature with a
# `bundled` corpus operator has exactly that operator's interface, so the
# operator's start kernel (and its tunables) fits the extracted problem.
SIGS = {
    "rmsnorm": dict(bundled="llm/rmsnorm", args=["x", "w"], init=["eps"], body=(
        "xf = x.float()\n"
        "r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)\n"
        "return (xf * r * w.float()).to(x.dtype)")),
    "layernorm": dict(bundled="llm/layernorm", args=["x", "w", "b"], init=["eps"], body=(
        "return F.layer_norm(x, (x.shape[-1],), w, b, self.eps)")),
    "swiglu": dict(bundled="llm/swiglu", args=["x"], init=[], body=(
        "gate, up = x.chunk(2, dim=-1)\n"
        "return F.silu(gate) * up")),
    "gemm_bias_gelu": dict(bundled="llm/gemm_bias_gelu", args=["x", "weight", "bias"], init=[], body=(
        "return F.gelu(F.linear(x, weight, bias))")),
    "silu_mul": dict(args=["g", "u"], init=[], body="return F.silu(g) * u"),
    "linear": dict(args=["x"], init=["weight", "bias"], body="return F.linear(x, self.weight, self.bias)"),
}
for _act in ("relu", "gelu", "silu", "sigmoid", "tanh"):
    SIGS["linear_" + _act] = dict(args=["x"], init=["weight", "bias"],
                                  body="return torch.%s(F.linear(x, self.weight, self.bias))" % _act
                                  if _act in ("sigmoid", "tanh") else
                                  "return F.%s(F.linear(x, self.weight, self.bias))" % _act)

_ACTS = {F.relu: "relu", torch.relu: "relu", F.gelu: "gelu", F.silu: "silu", torch.sigmoid: "sigmoid",
         torch.tanh: "tanh", F.sigmoid: "sigmoid", F.tanh: "tanh"}
_ACT_MODULES = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh"}
_MULS = (operator.mul, torch.mul)


class Region:
    """One replaceable region: nodes (in graph order, the last one is its
    output), call (("node", fx.Node) | ("param", qualname)) and init
    (numbers or ("param", qualname))."""

    def __init__(self, sig, nodes, call, init, where, module=None):
        self.sig, self.nodes, self.call, self.init, self.where = sig, nodes, call, init, where
        # module: the module of a module-level region (module_regions), whose
        # weights ("mparam", name) refer to.
        self.module = module

    @property
    def out(self):
        return self.nodes[-1] if self.nodes else "out"

    def inputs(self):
        """The graph values the region reads (its fallback's arguments); a
        module-level region reads its module's one input, "x"."""
        if not self.nodes:
            return ["x"]
        inside, seen, out = set(self.nodes), set(), []
        for n in self.nodes:
            for a in n.all_input_nodes:
                if a not in inside and a not in seen:
                    seen.add(a)
                    out.append(a)
        return out


class Tracer(fx.Tracer):
    """Keeps normalization modules whole (a user's RMSNorm class would
    otherwise be traced into its pow/mean/rsqrt)."""

    def is_leaf_module(self, m, qualname):
        return norm_kind(m) is not None or super().is_leaf_module(m, qualname)


def trace(model):
    graph = Tracer().trace(model)
    return fx.GraphModule(model, graph, type(model).__name__)


def module_eps(m):
    for name in ("eps", "variance_epsilon", "epsilon"):
        v = getattr(m, name, None)
        if isinstance(v, (int, float)):
            return float(v)
    return None


def norm_kind(m):
    if isinstance(m, nn.LayerNorm):
        ok = m.elementwise_affine and len(m.normalized_shape) == 1 and m._parameters.get("bias") is not None
        return "layernorm" if ok else None
    rms = getattr(nn, "RMSNorm", None)
    name = type(m).__name__.lower().replace("_", "")
    if (rms is not None and isinstance(m, rms)) or "rmsnorm" in name:
        # _parameters, not getattr: while tracing, a parameter read through
        # getattr is a proxy.
        w = m._parameters.get("weight")
        if isinstance(w, torch.Tensor) and w.dim() == 1:
            return "rmsnorm"
    return None


def _act_of(gm, n):
    if n.op == "call_function" and n.target in _ACTS:
        if n.target is F.gelu and n.kwargs.get("approximate", "none") != "none":
            return None
        return _ACTS[n.target]
    if n.op == "call_method" and n.target in ("relu", "sigmoid", "tanh"):
        return n.target
    if n.op == "call_module":
        m = gm.get_submodule(n.target)
        for cls, name in _ACT_MODULES.items():
            if type(m) is cls:
                if cls is nn.GELU and m.approximate != "none":
                    return None
                return name
    return None


def _linear(gm, n):
    if n.op == "call_module" and type(gm.get_submodule(n.target)) is nn.Linear:
        return gm.get_submodule(n.target)
    return None


def _only_users_inside(region_nodes):
    inside = set(region_nodes)
    return all(all(u in inside for u in n.users) for n in region_nodes[:-1])


def _is_mul(n):
    return (n.op == "call_function" and n.target in _MULS) or (n.op == "call_method" and n.target == "mul")


def _chunk_half(n):
    """n = getitem(chunk(x, 2, dim=-1), k): returns (chunk node, k)."""
    if n.op != "call_function" or n.target is not operator.getitem or len(n.args) != 2:
        return None, None
    c, k = n.args
    if not isinstance(c, fx.Node):
        return None, None
    is_chunk = (c.op == "call_method" and c.target == "chunk") or (c.op == "call_function" and c.target is torch.chunk)
    if not is_chunk:
        return None, None
    chunks = c.args[1] if len(c.args) > 1 else c.kwargs.get("chunks")
    dim = c.args[2] if len(c.args) > 2 else c.kwargs.get("dim", 0)
    if chunks != 2 or dim != -1:
        return None, None
    return c, k


def _norm_region(gm, n):
    if n.op != "call_module":
        return None
    m = gm.get_submodule(n.target)
    kind = norm_kind(m)
    if kind is None or len(n.args) != 1 or n.kwargs:
        return None
    call = [("node", n.args[0]), ("param", n.target + ".weight")]
    if kind == "layernorm":
        call.append(("param", n.target + ".bias"))
    eps = module_eps(m)
    return Region(kind, [n], call, [eps], n.target)


def _mul_region(gm, n):
    if not _is_mul(n) or len(n.args) != 2 or not all(isinstance(a, fx.Node) for a in n.args):
        return None
    for act, other in (n.args, n.args[::-1]):
        if _act_of(gm, act) != "silu" or len(act.all_input_nodes) != 1:
            continue
        g = act.all_input_nodes[0]
        cg, kg = _chunk_half(g)
        cu, ku = _chunk_half(other)
        if cg is not None and cg is cu and (kg, ku) == (0, 1):
            nodes = [cg, g, other, act, n]
            if _only_users_inside(nodes) and len(cg.users) == 2:
                return Region("swiglu", nodes, [("node", cg.args[0])], [], act.name)
        if len(act.users) == 1:
            return Region("silu_mul", [act, n], [("node", g), ("node", other)], [], act.name)
    return None


def _gemm_region(gm, n):
    act = _act_of(gm, n)
    if act is not None and len(n.all_input_nodes) == 1:
        lin_node = n.all_input_nodes[0]
        lin = _linear(gm, lin_node)
        if lin is not None and len(lin_node.users) == 1:
            x, w, b = ("node", lin_node.args[0]), ("param", lin_node.target + ".weight"), _bias(lin_node, lin)
            if act == "gelu" and b is not None:
                return Region("gemm_bias_gelu", [lin_node, n], [x, w, b], [], lin_node.target)
            return Region("linear_" + act, [lin_node, n], [x], [w, b], lin_node.target)
    lin = _linear(gm, n)
    if lin is not None and len(n.users) == 1 and _act_of(gm, next(iter(n.users))) is not None:
        return None  # claimed with its epilogue at the activation
    if lin is not None:
        return Region("linear", [n], [("node", n.args[0])], [("param", n.target + ".weight"), _bias(n, lin)], n.target)
    return None


def _bias(node, lin):
    return ("param", node.target + ".bias") if lin.bias is not None else None


def find_regions(gm):
    """The regions of a traced model, in graph order, none sharing a node.
    A lone GEMM is claimed last, so a GEMM with an epilogue is one region."""
    nodes = list(gm.graph.nodes)
    regions, used = [], set()
    for finder in (_norm_region, _mul_region, _gemm_region):
        for n in nodes:
            r = finder(gm, n)
            if r is not None and not (set(r.nodes) & used) and _only_users_inside(r.nodes):
                regions.append(r)
                used |= set(r.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    regions.sort(key=lambda r: order[r.out])
    return regions


def claimable(region):
    """Whether a signature region claims its nodes before the partitioner
    runs: only one with a bundled operator, whose start kernel (and
    tunables) fits it. A lone Linear or one with an activation is left to
    the partitioner, which fuses it with the epilogue it really has (a
    bias add and a ReLU written out) and gives it Inductor's start."""
    return bool(SIGS[region.sig].get("bundled"))


def fallback_module(gm, region):
    """The region's own nodes as a GraphModule over the model's modules: the
    original operators, called with region.inputs()."""
    g = fx.Graph()
    env = {}
    for a in region.inputs():
        env[a] = g.placeholder(a.name)
    for n in region.nodes:
        env[n] = g.node_copy(n, lambda x: env[x])
    g.output(env[region.out])
    return fx.GraphModule(gm, g, "Fallback_" + region.sig)


def param(root, qualname):
    mod, _, name = qualname.rpartition(".")
    return getattr(root.get_submodule(mod) if mod else root, name)


def tensor_of(root, region, ref):
    """A weight a region's call or init names: ("param", qualname in root)
    or ("mparam", attribute of region.module)."""
    kind, v = ref
    return getattr(region.module, v) if kind == "mparam" else param(root, v)


def module_regions(model):
    """The fallback when torch.fx cannot trace a model (data-dependent
    control flow, math on sizes): each normalization and Linear module is a
    region of its own, found by module rather than by graph, so chains and
    epilogues are not seen."""
    out = []
    for name, m in model.named_modules():
        kind = norm_kind(m)
        if kind is not None:
            call = [("node", "x"), ("mparam", "weight")] + ([("mparam", "bias")] if kind == "layernorm" else [])
            out.append(Region(kind, [], call, [module_eps(m)], name, module=m))
        elif type(m) is nn.Linear:
            init = [("mparam", "weight"), ("mparam", "bias") if m.bias is not None else None]
            out.append(Region("linear", [], [("node", "x")], init, name, module=m))
    return out


def device_arch(device):
    """The registry's arch key of a device: sm_90 (CUDA), gfx942 (ROCm),
    cpu-x86_64."""
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        hip = getattr(p, "gcnArchName", None)
        if getattr(torch.version, "hip", None) and hip:
            return hip.split(":")[0]
        return "sm_%d%d" % (p.major, p.minor)
    import platform
    return "cpu-" + platform.machine()


def replace(gm, region, module_name, module):
    """Swaps a region's nodes for one call to module(*region.inputs())."""
    gm.add_submodule(module_name, module)
    with gm.graph.inserting_after(region.out):
        new = gm.graph.call_module(module_name, tuple(region.inputs()))
    region.out.replace_all_uses_with(new)
    for n in reversed(region.nodes):
        gm.graph.erase_node(n)
    return new


def resolved_init(region, dtype):
    """region.init with a norm's default eps (None: torch's finfo(dtype).eps)
    made the number the computation uses, so problems and guards compare
    numbers."""
    if region.sig in ("rmsnorm", "layernorm"):
        return [torch.finfo(dtype).eps if v is None else v for v in region.init]
    return list(region.init)

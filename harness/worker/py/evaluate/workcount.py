"""Counting the work of a reference forward: FLOPs and bytes.

Shared by the evaluation child (evaluate/main.py, job arg count_work: counts the
reference's first correctness forward on the real inputs, at no extra run)
and harness/sol/trace.py (the `sol` command: counts on meta or CPU tensors).
The sol package writes this file beside trace.py from the worker's embedded
Python (worker.PyFile), so there is one copy.

FLOPs: matmul/bmm/conv/attention through the formulas of
torch.utils.flop_counter (exact, e.g. 2*M*N*K); every other aten op by
output elements x a per-op cost (COST below), reductions by input elements.
Bytes: the fewest that must move: each tensor input, parameter and buffer
read once, each output written once, at their own dtypes. A tensor read only
through gathers (embedding, embedding_bag, index_select, gather, take,
advanced indexing) counts only the distinct rows or elements its indices
name: a 2 GB embedding table looked up at 2.6M random ids is about half
read, and counting all of it would make an honest kernel look faster than
light. Distinct indices are counted after the forward, outside the modes,
so the counting's own ops never reach the reference's op record.
"""
import math

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils import flop_counter

aten = torch.ops.aten

# Exact formulas from torch's flop counter, keyed by overload packet. The CPU
# flash-attention entry point is not in torch's table; its math is the same.
EXACT = dict(flop_counter.flop_registry)
if hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
    EXACT[aten._scaled_dot_product_flash_attention_for_cpu] = flop_counter.sdpa_flop

# FLOPs per output element. Stated conventions (documented in harness/sol):
# simple arithmetic 1; transcendental (exp, log, tanh, erf, sin, ...) 4;
# sigmoid 4 (exp, add, reciprocal); silu 5; gelu 8 (tanh form); sqrt/rsqrt 1;
# softmax/log_softmax 7 per element (max, sub, exp=4, sum, div);
# layer/rms/group/batch norm 8 per element (mean, sub, square, sum, rsqrt-mul, affine).
TRANSC = 4
COST = {}
for n in ["add", "sub", "mul", "div", "neg", "relu", "abs", "maximum", "minimum",
          "clamp", "clamp_min", "clamp_max", "where", "reciprocal", "sqrt", "rsqrt",
          "square", "sign", "floor", "ceil", "round", "remainder", "fmod", "threshold",
          "hardtanh", "leaky_relu", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
          "logical_and", "logical_or", "bitwise_and", "masked_fill", "lerp", "addcmul",
          "addcdiv", "rsub", "hardsigmoid", "hardswish", "relu6", "pow"]:
    COST[n] = 1
for n in ["addcmul", "addcdiv", "lerp"]:
    COST[n] = 2
for n in ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf",
          "erfc", "sin", "cos", "tan", "atan", "asin", "acos", "sinh", "cosh", "softplus",
          "elu", "selu", "celu", "mish", "logsigmoid"]:
    COST[n] = TRANSC
COST["sigmoid"] = TRANSC
COST["silu"] = TRANSC + 1
COST["gelu"] = 8
COST["_softmax"] = 7
COST["_safe_softmax"] = 7
COST["_log_softmax"] = 7
for n in ["native_layer_norm", "native_group_norm", "native_batch_norm",
          "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "_fused_rms_norm"]:
    COST[n] = 8
# Reductions: FLOPs = input elements x factor.
REDUCE = {"sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "prod": 1,
          "argmax": 1, "argmin": 1, "logsumexp": TRANSC + 2, "norm": 2,
          "linalg_vector_norm": 2, "var": 3, "std": 3, "var_mean": 3, "std_mean": 3,
          "cumsum": 1, "cumprod": 1, "all": 1, "any": 1, "_cdist_forward": 3}
# Pure data movement or metadata: no FLOPs.
FREE = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand",
        "unsqueeze", "squeeze", "slice", "select", "as_strided", "alias", "detach",
        "clone", "copy_", "_to_copy", "contiguous", "cat", "stack", "split",
        "split_with_sizes", "unbind", "chunk", "narrow", "index_select", "gather",
        "embedding", "index", "empty", "empty_like", "zeros", "zeros_like", "ones",
        "ones_like", "full", "full_like", "fill_", "zero_", "new_empty", "new_zeros",
        "new_ones", "new_full", "arange", "lift_fresh", "flatten", "unflatten",
        "repeat", "roll", "flip", "pad", "constant_pad_nd", "empty_strided",
        "_reshape_alias", "view_as", "expand_as", "t_", "transpose_", "scalar_tensor",
        "masked_select", "nonzero", "topk", "sort", "scatter", "scatter_add", "index_put_",
        "index_add", "_local_scalar_dense", "resize_", "set_", "lift", "randn", "rand",
        "normal_", "uniform_", "bernoulli_", "dropout", "native_dropout", "max_pool2d_with_indices"}


def numel(t):
    return t.numel() if isinstance(t, torch.Tensor) else 0


def storage_key(t):
    """The identity of a tensor's storage, shared by its views (meta too)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 (sparse, nested: no plain storage)
        return None


# Ops that only make a new view or read metadata: they read no data.
VIEWS = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand",
         "unsqueeze", "squeeze", "slice", "select", "as_strided", "alias", "detach",
         "_reshape_alias", "view_as", "expand_as", "flatten", "unflatten", "narrow",
         "split", "split_with_sizes", "unbind", "chunk", "lift_fresh", "lift",
         "empty_like", "new_empty", "new_zeros", "new_ones", "new_full", "sym_size",
         "sym_stride", "sym_numel", "sym_storage_offset", "dim", "size", "stride"}
# Gathers: op -> (argument index of the source, of the indices, what the
# indices name): "rows" of dim 0; "slices" along the dim in args[1]; single
# "elements" along args[1] at the index's own coordinates (gather); "flat"
# elements (take); "list": advanced indexing by a list of index tensors.
GATHERS = {"embedding": (0, 1, "rows"), "_embedding_bag": (0, 1, "rows"),
           "_embedding_bag_forward_only": (0, 1, "rows"), "embedding_bag": (0, 1, "rows"),
           "index_select": (0, 2, "slices"), "gather": (0, 2, "elements"), "take": (0, 1, "flat"),
           "index": (0, 1, "list")}
# Past this many indices, distinct ones are not counted (sorting them would
# cost memory the evaluation may not have): the bound falls back to
# min(tensor bytes, indices x slice bytes).
MAX_UNIQUE = 1 << 27


def _distinct(lin):
    if lin.device.type == "meta" or lin.numel() > MAX_UNIQUE:
        return lin.numel()
    return int(torch.unique(lin).numel())


def gathered_bytes(kind, src, idx, dim):
    """The fewest bytes of src a gather must read: distinct slices (rows,
    elements) named by its indices, times a slice's bytes."""
    if src.numel() == 0:
        return 0
    el = src.element_size()
    if kind in ("rows", "slices"):
        d = 0 if kind == "rows" else dim % max(src.dim(), 1)
        if src.dim() == 0:
            return el
        n = src.shape[d]
        return _distinct(idx.reshape(-1).long() % n) * (src.numel() // n) * el
    if kind == "flat":
        return _distinct(idx.reshape(-1).long() % src.numel()) * el
    if kind == "elements":
        # gather reads src[..., idx[i...], ...] at the index's own coordinates.
        d = dim % src.dim()
        lin = (idx.long() % src.shape[d]) * src.stride(d)
        for k in range(idx.dim()):
            if k != d and idx.shape[k] > 1:
                shape = [1] * idx.dim()
                shape[k] = idx.shape[k]
                lin = lin + torch.arange(idx.shape[k], device=idx.device).view(shape) * src.stride(k)
        return _distinct(lin.reshape(-1)) * el
    # Advanced indexing: leading index tensors (integer, or one boolean mask).
    ts = list(idx)
    while ts and ts[-1] is None:
        ts.pop()
    if not ts or any(t is None for t in ts):
        return None
    if len(ts) == 1 and ts[0].dtype == torch.bool:
        m = ts[0]
        sel = m.numel() if m.device.type == "meta" else int(m.count_nonzero())
        return sel * (src.numel() // max(m.numel(), 1)) * el
    if any(t.dtype == torch.bool for t in ts):
        return None
    lead = math.prod(src.shape[:len(ts)])
    stride = 1
    lin = None
    for k in reversed(range(len(ts))):
        term = (ts[k].long() % src.shape[k]) * stride
        lin = term if lin is None else lin + term
        stride *= src.shape[k]
    return _distinct(lin.reshape(-1)) * (src.numel() // max(lead, 1)) * el


class Counter(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls):
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable by
        # default, which imports torch._dynamo on first use: ~5 s per
        # evaluation child on the GPU box (the parent cannot preload dynamo
        # there). Nothing here is compiled, so the wrapper is not needed.
        return False

    def __init__(self):
        super().__init__()
        self.ops = {}
        # Operand dtype of the FLOP-heaviest exact call: it sets the ceiling.
        self.dtype_of_exact = None
        self._best = -1.0
        self.suspended = 0  # >0 while inside an op counted as a whole (attention)
        # Storages read by some op other than a gather, and the gathers of
        # each storage (its tensor, the indices, the kind), counted later.
        self.read_whole = set()
        self.gathers = {}

    def exact(self, flops, dtype):
        if flops > self._best and dtype in DT:
            self._best = flops
            self.dtype_of_exact = DT[dtype]

    def add(self, name, flops, method):
        e = self.ops.setdefault(name, {"op": name, "calls": 0, "flops": 0.0, "method": method})
        e["calls"] += 1
        e["flops"] += float(flops)

    def note_reads(self, name, args, kwargs):
        g = GATHERS.get(name)
        if g is not None and len(args) > max(g[0], g[1]) and isinstance(args[g[0]], torch.Tensor):
            si, ii, kind = g
            src, idx = args[si], args[ii]
            if kind == "list":
                ok = isinstance(idx, (list, tuple)) and all(t is None or isinstance(t, torch.Tensor) for t in idx)
            else:
                ok = isinstance(idx, torch.Tensor) and not idx.is_floating_point()
            key = storage_key(src)
            if ok and key is not None:
                dim = args[1] if kind in ("slices", "elements") else None
                self.gathers.setdefault(key, []).append((kind, src, idx, dim))
                for t in tree_flatten((args[:si] + args[si + 1:], kwargs))[0]:
                    if isinstance(t, torch.Tensor):
                        self.read_whole.add(storage_key(t))
                return
        if name in VIEWS:
            return
        for t in tree_flatten((args, kwargs))[0]:
            if isinstance(t, torch.Tensor):
                self.read_whole.add(storage_key(t))

    def bytes_read(self, t):
        """(bytes, gathered?) of one input, parameter or buffer: its whole
        size, or the distinct part its gathers name when nothing else read
        it. Several gathers of one tensor count the largest (a lower bound
        of their union)."""
        full = nbytes(t)
        key = storage_key(t)
        if key is None or key in self.read_whole or key not in self.gathers:
            return full, False
        most = 0
        for kind, src, idx, dim in self.gathers[key]:
            try:
                b = gathered_bytes(kind, src, idx, dim)
            except Exception:  # noqa: BLE001 (an odd indexing form: count it all)
                b = None
            if b is None:
                return full, False
            most = max(most, b)
        return min(full, most), True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.suspended:
            return out
        packet = func._overloadpacket
        self.note_reads(packet.__name__, args, kwargs)
        base = packet.__name__.rstrip("_") if packet.__name__ not in FREE else packet.__name__
        name = "aten." + packet.__name__
        if packet in EXACT:
            f = EXACT[packet](*args, **kwargs, out_val=out)
            self.add(name, f, "exact (torch.utils.flop_counter formula)")
            ts = [a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]
            if ts:
                self.exact(f, ts[0].dtype)
            return out
        outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        if base in FREE or packet.__name__ in FREE:
            self.add(name, 0, "data movement: 0 FLOPs")
        elif base in REDUCE:
            ins = [a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]
            n = numel(ins[0]) if ins else 0
            self.add(name, n * REDUCE[base], "reduction: input elements x %d" % REDUCE[base])
        elif base in COST:
            n = numel(outs[0]) if outs else 0
            self.add(name, n * COST[base], "elementwise: output elements x %d" % COST[base])
        elif base in ("max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d", "max_pool3d",
                      "avg_pool3d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d"):
            ins = [a for a in tree_flatten(args)[0] if isinstance(a, torch.Tensor)]
            # Each output reads its window: approximate by input elements.
            self.add(name, numel(ins[0]) if ins else 0, "pooling: input elements x 1")
        else:
            n = numel(outs[0]) if outs else 0
            self.add(name, n, "unknown op: output elements x 1 (assumed)")
        return out


class Attention(TorchFunctionMode):
    """Counts scaled_dot_product_attention as one op, whatever backend runs it
    (on meta/CPU it decomposes into upcasts, bmm and softmax that would
    misstate both the FLOPs and the dtype): 2*B*H*Sq*Sk*(D+Dv) for the two
    matmuls, exactly as torch's flop counter, plus 7 per score for softmax."""

    def __init__(self, counter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch.nn.functional.scaled_dot_product_attention:
            return func(*args, **kwargs)
        q, k, v = args[0], args[1], args[2]
        lead = math.prod(q.shape[:-2])
        sq, d = q.shape[-2], q.shape[-1]
        sk, dv = k.shape[-2], v.shape[-1]
        # Causal masking leaves about half the scores to compute.
        frac = 0.5 if kwargs.get("is_causal") or (len(args) > 5 and args[5]) else 1.0
        scores = lead * sq * sk * frac
        mm = 2 * scores * (d + dv)
        c = self.counter
        c.add("scaled_dot_product_attention", mm + 7 * scores,
              "exact matmuls 2*B*H*Sq*Sk*(D+Dv) + softmax 7 per score" + (", causal: half the scores" if frac < 1 else ""))
        c.exact(mm, q.dtype)
        c.suspended += 1
        try:
            return func(*args, **kwargs)
        finally:
            c.suspended -= 1


DT = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
      torch.float64: "fp64"}
for _n in ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]:
    if hasattr(torch, _n):
        DT[getattr(torch, _n)] = "fp8"


def nbytes(t):
    return t.numel() * t.element_size()


def summarize(counter, inputs, model, out, device):
    """The work dict of one counted forward: flops, bytes, dtype and details."""
    bd = []

    def reads(op, ts):
        counted = [counter.bytes_read(x) for x in ts]
        g = sum(1 for _b, gathered in counted if gathered)
        how = "%d tensor(s), each read once" % len(ts)
        if g:
            how += "; %d read through gathers: only the distinct rows or elements their indices name" % g
        bd.append({"op": op, "bytes": float(sum(b for b, _g in counted)), "method": how})

    tin = [x for x in tree_flatten(list(inputs))[0] if isinstance(x, torch.Tensor)]
    reads("read inputs", tin)
    params = list(model.parameters()) + list(model.buffers())
    reads("read parameters+buffers", params)
    touts = [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor)]
    bd.append({"op": "write outputs", "bytes": float(sum(nbytes(x) for x in touts)),
               "method": "%d tensor(s), each written once" % len(touts)})
    # Dtype that sets the compute ceiling: that of the FLOP-heaviest exact op's
    # operands if any, otherwise the float dtype holding the most input bytes.
    dtype = counter.dtype_of_exact
    if dtype is None:
        by = {}
        for x in tin + params + touts:
            if x.dtype in DT:
                by[DT[x.dtype]] = by.get(DT[x.dtype], 0) + nbytes(x)
        dtype = max(by, key=by.get) if by else "fp32"
    flops = sum(o["flops"] for o in counter.ops.values())
    ops = sorted(counter.ops.values(), key=lambda o: -o["flops"])
    return {"flops": flops, "bytes": sum(b["bytes"] for b in bd), "dtype": dtype,
            "device": str(device), "ops": ops, "bytes_detail": bd}

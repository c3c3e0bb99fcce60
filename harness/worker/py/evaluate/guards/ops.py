"""What a forward dispatches: the torch functions it calls (for the
reference's "main ops") and the whole aten op trace (for "is this the
reference?"), plus the op-name tables both use."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Ops that are glue, not the work: shape queries, views, moves, creation,
# plain arithmetic. A candidate may call these freely.
TRIVIAL_OPS = {
    "size", "dim", "numel", "shape", "stride", "dtype", "device", "is_contiguous", "data_ptr",
    "storage_offset", "element_size", "view", "reshape", "flatten", "unflatten", "squeeze",
    "unsqueeze", "permute", "transpose", "t", "contiguous", "expand", "expand_as", "view_as",
    "reshape_as", "narrow", "select", "__getitem__", "__setitem__", "split", "chunk", "unbind",
    "to", "cuda", "cpu", "float", "half", "bfloat16", "double", "int", "long", "bool", "type",
    "type_as", "clone", "detach", "copy_", "empty", "empty_like", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "arange",
    "tensor", "as_tensor", "fill_", "zero_", "__add__", "__radd__", "__iadd__", "__sub__",
    "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__", "__truediv__", "__rtruediv__",
    "__itruediv__", "__neg__", "add", "sub", "mul", "div", "add_", "mul_", "sub_", "div_",
    "__len__", "__iter__", "__bool__", "__format__", "__repr__", "__hash__", "__eq__", "__ne__",
    "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__or__", "item", "tolist", "is_floating_point",
    "requires_grad_", "__get__", "__set__", "_has_compatible_shallow_copy_type", "cat", "stack",
    "is_complex", "get_device", "untyped_storage", "storage", "__reduce_ex__", "__deepcopy__",
    "__index__", "__int__", "__float__", "__contains__", "__array__", "__setstate__", "data",
    "grad", "requires_grad", "is_cuda", "layout", "ndim", "T", "mT", "names", "is_leaf",
    "device_type", "new_tensor", "empty_strided", "as_strided",
}
# Ops that are the work of a kernel problem. When the reference calls some
# of these, they are its "main" ops and a candidate calling one of them is
# calling the reference; the reference's glue (relu after a GEMM, say) stays
# allowed. A reference with none of these has all its non-trivial ops as main.
HEAVY_OPS = {
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "linear", "bilinear",
    "softmax", "log_softmax", "softmin", "normalize", "layer_norm", "rms_norm", "group_norm",
    "batch_norm", "instance_norm", "local_response_norm", "norm", "vector_norm", "matrix_norm",
    "scaled_dot_product_attention", "multi_head_attention_forward", "embedding", "embedding_bag",
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort", "topk", "kthvalue",
    "argmax", "argmin", "einsum", "tensordot", "dot", "vdot", "inner", "outer", "cdist",
    "logsumexp", "bucketize", "searchsorted", "segment_reduce", "scatter_add", "scatter_reduce",
    "index_add", "index_reduce", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "cosine_similarity", "pairwise_distance",
    "triplet_margin_loss", "hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss",
    "mean", "sum", "nansum", "amax", "amin", "max", "min", "aminmax", "var", "std", "var_mean",
    "std_mean", "prod", "median", "mode", "quantile", "interpolate", "grid_sample", "unfold", "fold",
    "pixel_shuffle", "gelu", "silu", "mish", "glu", "histc", "bincount", "unique", "fft", "rfft",
}
HEAVY_PREFIXES = ("conv", "max_pool", "avg_pool", "adaptive_", "lp_pool", "fractional_max_pool",
                  "_scaled_dot", "_flash", "_efficient_attention", "lstm", "gru", "rnn", "fft_")


def is_heavy(name):
    return name in HEAVY_OPS or name.startswith(HEAVY_PREFIXES)


# aten ops that do a problem's work under names no torch function has
# (what layer_norm, softmax or a convolution dispatch to).
HEAVY_ATEN = {
    "native_layer_norm", "native_batch_norm", "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training", "native_group_norm", "_fused_rms_norm", "_softmax",
    "_log_softmax", "_embedding_bag", "_embedding_bag_forward_only", "_cdist_forward", "_fft_r2c",
    "_fft_c2c", "_fft_c2r", "linalg_vector_norm", "_weight_norm_interface", "_cudnn_rnn", "miopen_rnn",
    "mkldnn_rnn_layer", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_upsample_bilinear2d_aa",
}
HEAVY_ATEN_PREFIXES = ("cudnn_", "miopen_", "mkldnn_", "_mkldnn", "upsample_", "_upsample", "_scaled_dot", "_flash",
                       "_efficient_attention", "embedding", "_embedding")
_GEMM = "matrix multiply (aten mm/bmm/addmm/...)"
_CONV = "convolution"


def aten_base(name):
    """aten.mm.default -> mm; other namespaces keep their whole name."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "aten" else name


# Families of aten ops that are one kind of work: a candidate reaching a
# GEMM through bmm (einsum) does what a reference's mm does.
_GEMM_ATEN = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "matmul", "linear",
              "_addmm_activation", "_int_mm", "_scaled_mm", "tensordot", "einsum", "inner", "outer"}
_CONV_PREFIXES = ("conv", "_convolution", "cudnn_convolution", "mkldnn_convolution", "miopen_convolution", "slow_conv",
                  "_slow_conv", "thnn_conv", "_nnpack_spatial_convolution")


def heavy_aten(trace):
    """The aten ops of a trace that do a problem's work: the reference's,
    whatever torch function, alias or torch.ops call reached them
    (torch.mm, torch.ops.aten.mm and einsum's bmm all do what matmul does),
    named by their family (GEMMs, convolutions) or their own name."""
    out = set()
    for name in trace:
        if not name.startswith("aten."):
            continue
        b = aten_base(name)
        if b in _GEMM_ATEN:
            out.add(_GEMM)
        elif b.startswith(_CONV_PREFIXES):
            out.add(_CONV)
        elif is_heavy(b) or b in HEAVY_ATEN or b.startswith(HEAVY_ATEN_PREFIXES):
            out.add(b)
    return out


def shared_work(ref_aten, cand_aten, mains):
    """The heavy aten ops (heavy_aten) both sides dispatched that make the
    candidate's work the reference's: a GEMM, a convolution, attention, a
    native norm or softmax kernel, an embedding; a generic one (a sum, a
    mean, a sort) only when the reference called it by name (mains), since
    composites such as rms_norm decompose into those and a candidate
    written in plain torch ops may use them."""
    out = []
    for x in sorted(ref_aten & cand_aten):
        if x in (_GEMM, _CONV) or x in HEAVY_ATEN or x.startswith(HEAVY_ATEN_PREFIXES) or x in mains:
            out.append(x)
    return out


def op_name(func):
    n = getattr(func, "__name__", None) or repr(func)
    return n


class OpRecorder(torch.overrides.TorchFunctionMode):
    """Records the top-level torch functions a forward calls (nested calls
    inside a torch function run with the mode popped and are not seen)."""

    def __init__(self):
        super().__init__()
        self.ops = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        n = op_name(func)
        self.ops[n] = self.ops.get(n, 0) + 1
        return func(*args, **(kwargs or {}))


def main_ops(ref_ops):
    nontrivial = {o for o in ref_ops if o not in TRIVIAL_OPS}
    heavy = {o for o in nontrivial if is_heavy(o)}
    return heavy or nontrivial


# aten ops that only view, copy, allocate or query: a candidate that
# dispatches the reference's compute ops in the reference's order, with some
# of these added or removed, is still the reference.
GLUE_ATEN = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "t", "t_", "transpose", "transpose_",
    "permute", "expand", "expand_as", "unsqueeze", "squeeze", "slice", "select", "as_strided",
    "alias", "detach", "clone", "copy_", "_to_copy", "to", "contiguous", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "new_zeros", "new_ones", "new_full", "fill_", "zero_", "lift_fresh",
    "lift_fresh_copy", "lift", "flatten", "unflatten", "view_as", "split", "split_with_sizes",
    "unbind", "chunk", "narrow", "_local_scalar_dense", "resize_", "set_", "scalar_tensor",
    "is_same_size", "result_type", "_has_compatible_shallow_copy_type", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "dim", "size", "stride", "numel", "is_contiguous",
}


class OpTrace(TorchDispatchMode):
    """Records every aten op a forward dispatches, in order (overload names
    such as aten.mm.default). Nested dispatch (an op's decomposition) is
    seen too: the trace is what actually ran, not only top-level calls."""

    @classmethod
    def _should_skip_dynamo(cls):
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable by
        # default, which imports torch._dynamo on first use: ~5 s per
        # evaluation child on the GPU box (the parent cannot preload dynamo
        # there). Nothing here is compiled, so the wrapper is not needed.
        return False

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def compute_ops(trace):
    """The trace without glue (views, copies, allocations, queries)."""
    return [name for name in trace if aten_base(name) not in GLUE_ATEN]


def same_trace(ref, cand):
    """Why the candidate's dispatched ops are the reference's, or None.
    Exact: the same aten op sequence. Compute: every compute op of the
    reference (views, copies and allocations aside) dispatched by the
    candidate in the reference's order, whatever else it runs: the
    reference with a .contiguous() or a clone added, or beside a decoy
    kernel of the candidate's own, is still the reference. Ops compare by
    name, whatever the overload."""
    if ref and cand == ref:
        return "its forward dispatches exactly the reference's aten op trace (%d ops: %s)" % (len(ref), _head(ref))
    rc, cc = compute_ops(ref), compute_ops(cand)
    # By op, not overload: `y * 0.5` is aten.mul.Tensor from Python and
    # aten.mul.Scalar from C++ (at::mul in a load_inline extension).
    if rc and _in_order([aten_base(x) for x in rc], [aten_base(x) for x in cc]):
        more = len(cc) - len(rc)
        return ("its forward dispatches every compute op of the reference in the reference's order (%d ops: %s)%s, "
                "apart from views, copies and allocations") % (
            len(rc), _head(rc), (" among %d other op(s) of its own" % more) if more else "")
    return None


def _in_order(sub, seq):
    """Whether sub is a subsequence of seq (in order, gaps allowed)."""
    it = iter(seq)
    return all(any(x == y for y in it) for x in sub)


def _head(ops, n=6):
    s = ", ".join(ops[:n])
    return s + (", ..." if len(ops) > n else "")

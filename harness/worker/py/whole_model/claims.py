"""Finds, in the graphs Dynamo captured, the nodes of each signature region
(whole_model.patterns: the regions the deploy runtime can replace, found by
torch.fx or by module), so the partitioner leaves them whole and the
profile times them on the same run as everything else.

Both graphs say which module each node ran in (nn_module_stack): a region
that is a module call (a normalization, a Linear) claims every captured
node that ran inside that module; a region of functions (silu * mul, the
SwiGLU chunk) claims the captured nodes with the same module, operator and
occurrence. Dynamo names modules from the frame it captured ("L['self'].
attn.qkv"); the frame's own place in the model comes from a parameter's
qualified name."""
import re

from whole_model import partition as pt

_INDEX = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"\[['\"]([^'\"]+)['\"]\]")


def dynamo_path(n):
    """The module path of a captured node, relative to the captured frame's
    self ("" at its top)."""
    stack = n.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    name = list(stack.values())[-1][0]
    name = re.sub(r"^L\[['\"]self['\"]\]", "", str(name))
    name = name.replace("._modules", "")
    name = _KEY.sub(r".\1", _INDEX.sub(r".\1", name))
    return name.strip(".")


def fx_path(n):
    if n.op == "call_module":
        return str(n.target)
    stack = n.meta.get("nn_module_stack") or {}
    return list(stack.keys())[-1] if stack else ""


def frame_prefix(qualname):
    """The root qualname of the module whose forward Dynamo captured, with a
    trailing dot ("" for the model itself; None when no parameter says).
    qualname: placeholder -> the model parameter or buffer it was."""
    for n, q in qualname.items():
        module_q = q.rpartition(".")[0]
        p = dynamo_path(n)
        if not p:
            return module_q + "." if module_q else ""
        if module_q == p:
            return ""
        if module_q.endswith("." + p):
            return module_q[:-len(p)]
    return None


def _occurrences(nodes, path_of, name_of):
    """node -> (path, op, k): the k-th node of that op in that module."""
    seen, out = {}, {}
    for n in nodes:
        key = (path_of(n), name_of(n))
        k = seen.get(key, 0)
        seen[key] = k + 1
        out[n] = key + (k,)
    return out


def claims(gm, qualname, fx_gm, regions):
    """[(index into regions, [captured nodes])] for the regions found in
    the captured graph gm (qualname: its placeholders that are the model's
    parameters or buffers, by root qualified name). regions:
    whole_model.patterns.Region list (fx nodes, or a module-level region's
    `where`)."""
    prefix = frame_prefix(qualname)
    if prefix is None:
        return []
    nodes = [n for n in gm.graph.nodes if pt.kind(gm, n)]
    path = {n: prefix + dynamo_path(n) if dynamo_path(n) else prefix.rstrip(".") for n in nodes}
    by_key = {v: n for n, v in _occurrences(nodes, lambda n: path[n], lambda n: pt.op_name(gm, n)).items()}
    fx_keys = {}
    if fx_gm is not None:
        fx_nodes = [n for n in fx_gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        fx_keys = _occurrences(fx_nodes, fx_path, lambda n: pt.op_name(fx_gm, n))
    out, used = [], set()
    for i, r in enumerate(regions):
        mine = []
        modules = [r.where] if not r.nodes else [str(n.target) for n in r.nodes if n.op == "call_module"]
        for m in modules:
            mine += [n for n in nodes if path[n] == m or path[n].startswith(m + ".")]
        for n in r.nodes:
            if n.op != "call_module" and n in fx_keys and fx_keys[n] in by_key:
                mine.append(by_key[fx_keys[n]])
        mine = [n for n in dict.fromkeys(mine) if n not in used]
        if mine:
            used.update(mine)
            out.append((i, mine))
    return out

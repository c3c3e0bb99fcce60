"""kevolve_kernels: kernels evolved by kevolve-mcp for one model, with the
registry that says where each was verified, and patch(model) -> model.

    import kevolve_kernels
    model = kevolve_kernels.patch(model)

patch traces the model with torch.fx, finds the same regions the optimizer
extracted (a normalization, an activation chain, a GEMM with its epilogue)
and replaces each region that has registry entries by a guarded call: the
evolved kernel runs only on the exact shapes, dtype, constants and device
arch an entry was verified on, with no gradient needed, and the original
operators run otherwise. stats(model) counts kernel calls and fallbacks.
This package does not need kevolve-mcp; it carries its own copy of the
kevolve loaders (kevolve_kernels/_vendor) for kernels that use them."""
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_VENDOR = os.path.join(_HERE, "_vendor")
if _VENDOR not in sys.path:
    # Kernels import their loaders as `from kevolve import load_c`.
    sys.path.append(_VENDOR)

from ._dispatch import Guarded, patch_with  # noqa: E402
from ._dispatch import stats as _guarded_stats  # noqa: E402


def registry():
    """The registry's entries (registry.json)."""
    with open(os.path.join(_HERE, "registry.json")) as f:
        return json.load(f)


def patch(model, arch=None, inductor=False):
    """The model with every registered region dispatched to its kernel; the
    original model is not changed. Kernels for regions the optimizer cut
    from TorchDynamo's graphs are served by custom ops inside
    torch.compile(model) (inductor: Inductor compiles everything around
    them, as torch.compile would); a registry of signature regions only
    gives a torch.fx GraphModule (or the model with modules wrapped)."""
    reg = registry()
    entries = [e for e in reg.get("entries", []) if arch is None or e["arch"] == arch]
    if any("#" in e["op"] for e in entries) or inductor:
        from . import _graphs
        return _graphs.compile_model(model, entries, _HERE, inductor=inductor)
    return patch_with(model, reg, _HERE, arch=arch)


def stats(model):
    """[{op, where, hits, fallbacks}] of the kernels serving a patched
    model: its guarded regions, and this process's custom ops."""
    from . import _graphs
    return _guarded_stats(model) + _graphs.stats()


__all__ = ["Guarded", "patch", "registry", "stats"]

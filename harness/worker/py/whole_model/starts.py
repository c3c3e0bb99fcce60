"""Inductor start kernels (run in the warm worker like model_profile): for
each extracted problem, the code torch.compile generates for its reference
on this device (Triton kernels on a GPU, C++ on a CPU, with the library
calls Inductor chose beside them), written as a candidate the search
starts from, so no region starts slower than torch.compile's own kernels.

The candidate carries the problem's source (its Model builds the weights)
and, for each of Inductor's configurations that generated different code
(default; max-autotune, which benchmarks GEMM templates and kernel
configurations at compile time; coordinate-descent tuning of block sizes
on a GPU; GEMMs as Inductor's own C++ or Triton templates), that code as a
string, executed at import. Code that is only library calls (a lone GEMM's
default) is not a kernel of the candidate's own and is left out. VARIANT picks one;
TUNABLES lets the offline tuner try each. A configuration whose code does
not match the reference on the problem's inputs, or whose generated entry
point takes its arguments in another order than the candidate passes them,
is left out.

args: problems (paths), device. Returns {"starts": {problem: start path},
"errors": {problem: why}, "reused": [problems answered from an earlier
run's start or error, made from the same problem, torch and device]}."""
import hashlib
import os
import re

import torch

from whole_model import verify
from whole_model.profile import load_model

_ASSERT = re.compile(r"assert_size_stride\((\w+), \(([^)]*)\), \(([^)]*)\)")

_TEMPLATE = '''

# Inductor start (kevolve-mcp optimize): the code torch.compile %(torch)s
# generated for the reference above on %(device)s, one string per
# configuration: %(variants)s. VARIANT picks one; the tuner tries each.
import torch._inductor.config as _inductor_config

_inductor_config.compile_threads = 1  # no compile thread pool left running
_INDUCTOR = %(codes)r
VARIANT = 0
TUNABLES = %(tunables)s
_KERNELS = {}


def _variant():
    ns = _KERNELS.get(VARIANT)
    if ns is None:
        ns = {"__name__": "kevolve_inductor_%%d" %% VARIANT}
        exec(compile(_INDUCTOR[VARIANT], "<inductor variant %%d>" %% VARIANT, "exec"), ns)
        _KERNELS[VARIANT] = ns
    return ns["call"]


class ModelNew(nn.Module):
    def __init__(self, *init):
        super().__init__()
        self.ref = Model(*init)

    def forward(self, *acts):
        state = self.__dict__.get("_kv_state")
        if state is None:
            state = [t for _, t in self.ref.named_parameters()] + [t for _, t in self.ref.named_buffers()]
            self.__dict__["_kv_state"] = state
        out = _variant()(state + list(acts))
        return out[0] if len(out) == 1 else tuple(out)
'''

# Inductor's configurations per device. The GEMM-template ones make a GEMM
# its own kernel (a C++ or Triton template) where the default calls the
# library: a region that is only a library call has no kernel of its own
# to start from.
_CONFIGS = {
    "cpu": [("default", {}), ("max-autotune", {"max_autotune": True}),
            ("cpp-gemm-template", {"max_autotune": True, "max_autotune_gemm_backends": "CPP"})],
    "cuda": [("default", {}), ("max-autotune", {"max_autotune": True}),
             ("coordinate-descent", {"coordinate_descent_tuning": True}),
             ("triton-gemm-template", {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"})],
}

# A generated module that compiles a kernel of its own (not only library
# calls through extern_kernels).
_OWN_KERNEL = re.compile(r"async_compile\.(cpp_pybinding|triton|cuda|rocm)\(")


def _flat(model):
    """The model as a function of (its parameters and buffers, then its
    inputs), the argument order the generated entry point takes."""
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    state = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]

    def flat(*args):
        return torch.func.functional_call(model, dict(zip(names, args[:len(names)])), tuple(args[len(names):]))
    return flat, state


def generate(problem, device, configs):
    """([(config name, code)], [why a configuration failed]): the distinct
    codes with kernels of their own Inductor generated, each matching the
    reference on the problem's inputs within the harness's tolerance (a
    TF32 GEMM template can be close, and still not close enough)."""
    from torch._inductor.utils import run_and_get_code
    _, model, acts = load_model(problem, device, name="kevolve_start_problem_%d" % abs(hash(problem)))
    flat, state = _flat(model)
    args = state + acts
    with torch.no_grad():
        want = model(*acts)
    out, failed = [], []
    for name, opts in configs:
        torch._dynamo.reset()
        try:
            with torch.no_grad(), torch._inductor.config.patch(opts):
                _, codes = run_and_get_code(torch.compile(flat, dynamic=False), *args)
        except Exception as e:  # noqa: BLE001 - a configuration that does not apply (a template with no choice)
            failed.append("%s: %s" % (name, str(e).splitlines()[0][:160] if str(e) else type(e).__name__))
            continue
        code = codes[-1] if codes else ""
        if not _OWN_KERNEL.search(code) or any(code == c for _, c in out) or not _order_ok(code, args):
            continue
        ns = {"__name__": "kevolve_inductor_check"}
        exec(compile(code, "<inductor>", "exec"), ns)
        with torch.no_grad():
            got = ns["call"](list(args))
        ok, why = verify.check(want, got)
        if ok:
            out.append((name, code))
        else:
            failed.append("%s: %s" % (name, why[:160]))
    return out, failed


def _order_ok(code, args):
    """The generated entry point checks its arguments' shapes and strides
    in order: they must be the ones passed (parameters, buffers, inputs)."""
    seen = [(tuple(int(x) for x in s.replace(" ", "").split(",") if x), tuple(int(x) for x in st.replace(" ", "").split(",") if x))
            for _, s, st in _ASSERT.findall(code)]
    tensors = [(tuple(a.shape), tuple(a.stride())) for a in args if isinstance(a, torch.Tensor)]
    return seen == tensors


def write(problem, variants, device, key=""):
    src = open(problem).read()
    path = _start_path(problem)
    tunables = '{"VARIANT": %r}' % list(range(len(variants))) if len(variants) > 1 else "{}"
    with open(path, "w") as f:
        f.write(src + _TEMPLATE % dict(torch=torch.__version__, device=device, variants=", ".join(n for n, _ in variants),
                                       codes=[c for _, c in variants], tunables=tunables))
        f.write(_KEY_LINE + key + "\n")
    return path


# What a start was made from (the problem's text, torch, the device and
# this module), as its last line; the .err file's first line for a problem
# Inductor gave no start. optimize run again on the same model finds them
# and skips the compiles (every configuration of every region: minutes on
# a GPU, most of them max-autotune's).
_KEY_LINE = "# kevolve start key: "


def _start_path(problem):
    return os.path.splitext(problem)[0] + ".inductor.py"


def _error_path(problem):
    return os.path.splitext(problem)[0] + ".inductor.err"


def start_key(problem, device):
    h = hashlib.sha256()
    with open(problem, "rb") as f:
        h.update(f.read())
    with open(__file__, "rb") as f:
        h.update(f.read())
    h.update(("%s|%s" % (torch.__version__, _device_identity(device))).encode())
    return h.hexdigest()


def _device_identity(device):
    """What Inductor's code depends on besides the problem: the GPU model
    and its compute capability, or the CPU's vector extensions."""
    if device.type == "cuda":
        return "%s sm_%d%d" % ((torch.cuda.get_device_name(device),) + torch.cuda.get_device_capability(device))
    return "cpu " + torch.backends.cpu.get_cpu_capability()


def cached(problem, key):
    """(start path, None) or (None, error) made earlier under key, or None."""
    try:
        with open(_start_path(problem)) as f:
            if f.read().endswith(_KEY_LINE + key + "\n"):
                return _start_path(problem), None
    except OSError:
        pass
    try:
        with open(_error_path(problem)) as f:
            first, _, why = f.read().partition("\n")
        if first == key:
            return None, why
    except OSError:
        pass
    return None


def _remember_error(problem, key, why):
    with open(_error_path(problem), "w") as f:
        f.write(key + "\n" + why)


def main(args, ctx):
    device = torch.device(args.get("device") or "cpu")
    configs = _CONFIGS["cuda" if device.type == "cuda" else "cpu"]
    starts, errors, reused = {}, {}, []
    problems = list(args.get("problems") or [])
    for i, p in enumerate(problems):
        ctx.progress("inductor %s" % os.path.basename(p), i, len(problems))
        key = start_key(p, device)
        hit = cached(p, key)
        if hit is not None:
            reused.append(p)
            if hit[0]:
                starts[p] = hit[0]
            else:
                errors[p] = hit[1]
            continue
        try:
            variants, failed = generate(p, device, configs)
            if variants:
                starts[p] = write(p, variants, str(device), key)
            else:
                errors[p] = "Inductor generated no kernel of its own that matched the reference (only library calls%s)" % (
                    "; " + "; ".join(failed) if failed else "")
                _remember_error(p, key, errors[p])
        except Exception as e:  # noqa: BLE001 - one problem's failure is reported, the rest go on (and tried again next time)
            errors[p] = "%s: %s" % (type(e).__name__, str(e)[:300])
    return {"starts": starts, "errors": errors, "reused": reused}

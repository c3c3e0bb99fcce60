"""Test driver for the corpus: runs references and start candidates on CPU.

Reads a JSON job on stdin, prints one JSON document on stdout:
  {"mode": "ref"|"start", "root": DIR, "kind": "c"|"triton", "seeds": [..],
   "problems": [{"name", "dir", "shapes", "dtypes", "dtype", "tolerance", "starts"}]}
Each problem is checked independently; failures are reported, never raised,
so one broken problem does not hide the others.
"""
import importlib.util
import json
import os
import sys
import time
import traceback

import torch

DEFAULT_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-7, 1e-7),
               torch.bfloat16: (1e-2, 1e-2), torch.float16: (1e-2, 1e-2)}
DTYPE_NAMES = {"float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16, "int64": torch.int64, "float64": torch.float64}


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def clone(xs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def check_ref(p, root, shape_set):
    d = os.path.join(root, p["dir"])
    mod = load(os.path.join(d, "reference.py"), "ref_" + p["dir"].replace("/", "_"))
    res = {}
    want = {k: {n: float(v) for n, v in s.items()} for k, s in p["shapes"].items()}
    got = {k: {n: float(v) for n, v in s.items()} for k, s in getattr(mod, "SHAPES", {}).items()}
    if want != got:
        raise AssertionError(f"meta shapes {want} != reference SHAPES {got}")
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = mod.Model(*mod.get_init_inputs())
    inputs = mod.get_inputs()
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            if x.device.type != "cpu":
                raise AssertionError(f"input {i} created on {x.device}, want cpu")
            if x.numel() > 0 and not bool(x.ne(0).any()):
                raise AssertionError(f"input {i} is all zeros")
    want_dtype = (p.get("dtypes") or {}).get(shape_set) or p["dtype"]
    float_dtypes = [x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if float_dtypes and DTYPE_NAMES.get(want_dtype) not in float_dtypes:
        raise AssertionError(f"declared dtype {want_dtype} not among input dtypes {float_dtypes}")
    with torch.no_grad():
        outs = as_list(model(*inputs))
    res["seconds"] = time.perf_counter() - t0
    res["outputs"] = []
    for o in outs:
        if not isinstance(o, torch.Tensor):
            raise AssertionError(f"output is {type(o).__name__}, not a tensor")
        if o.is_floating_point() and not bool(torch.isfinite(o).all()):
            raise AssertionError("reference output has NaN/Inf")
        res["outputs"].append({"shape": list(o.shape), "dtype": str(o.dtype)})
    return res


def check_compile(p, root, kind):
    """Compile a start candidate's kernels without running them (CUDA needs
    only NVRTC/nvcc here). By convention each start defines _kernels()."""
    d = os.path.join(root, p["dir"])
    cand = load(os.path.join(d, p["starts"][kind]), f"cand_{kind}_" + p["dir"].replace("/", "_"))
    t0 = time.perf_counter()
    k = cand._kernels()
    names = list(k.kernels) if hasattr(k, "kernels") else []
    if kind == "cuda" and not names:
        raise AssertionError("no extern \"C\" __global__ kernels found")
    return {"seconds": time.perf_counter() - t0, "kernels": names}


def to_dev(xs, dev):
    return [x.to(dev) if isinstance(x, torch.Tensor) else x for x in xs]


def check_start(p, root, kind, seeds, dev="cpu"):
    d = os.path.join(root, p["dir"])
    tag = p["dir"].replace("/", "_")
    ref = load(os.path.join(d, "reference.py"), "ref_" + tag)
    cand = load(os.path.join(d, p["starts"][kind]), f"cand_{kind}_{tag}")
    res = {"max_abs_err": 0.0}
    for seed in seeds:
        init = ref.get_init_inputs()
        torch.manual_seed(seed)
        model = ref.Model(*init).to(dev)
        torch.manual_seed(seed)
        new = cand.ModelNew(*init).to(dev)
        torch.manual_seed(seed + 1000)
        inputs = to_dev(ref.get_inputs(), dev)
        with torch.no_grad():
            want = as_list(model(*clone(inputs)))
            before = clone(inputs)
            got = as_list(new(*inputs))
        if dev == "cuda":
            torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(inputs, before)):
            if isinstance(a, torch.Tensor) and not torch.equal(a, b):
                raise AssertionError(f"seed {seed}: candidate mutated input {i}")
        if len(got) != len(want):
            raise AssertionError(f"seed {seed}: {len(got)} outputs, want {len(want)}")
        for w, g in zip(want, got):
            if g.device != w.device:
                raise AssertionError(f"seed {seed}: output on {g.device}, want {w.device}")
            if g.shape != w.shape or g.dtype != w.dtype:
                raise AssertionError(f"seed {seed}: got {tuple(g.shape)} {g.dtype}, want {tuple(w.shape)} {w.dtype}")
            if not w.is_floating_point():
                if not torch.equal(g, w):
                    n = int((g != w).sum())
                    raise AssertionError(f"seed {seed}: {n} of {w.numel()} integer outputs differ")
                continue
            tol = p.get("tolerance")
            atol, rtol = (tol["atol"], tol["rtol"]) if tol else DEFAULT_TOL[w.dtype]
            if not bool(torch.isfinite(g).all()):
                raise AssertionError(f"seed {seed}: NaN/Inf in candidate output")
            err = (g.double() - w.double()).abs()
            res["max_abs_err"] = max(res["max_abs_err"], float(err.max()) if err.numel() else 0.0)
            if not torch.allclose(g.double(), w.double(), atol=atol, rtol=rtol):
                bad = err > atol + rtol * w.double().abs()
                raise AssertionError(f"seed {seed}: {int(bad.sum())} of {w.numel()} elements outside "
                                     f"atol={atol} rtol={rtol}; max abs err {float(err.max()):.3g}")
    # One rough timing of each (after the warm-up above), for the report only.
    for key, fn in (("ref_ms", model), ("cand_ms", new)):
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            fn(*inputs)
        if dev == "cuda":
            torch.cuda.synchronize()
        res[key] = (time.perf_counter() - t0) * 1e3
    return res


def main():
    job = json.load(sys.stdin)
    shape_set = os.environ.get("KEVOLVE_SHAPES", "large")
    results = {}
    for p in job["problems"]:
        try:
            if job["mode"] == "ref":
                r = check_ref(p, job["root"], shape_set)
            elif job["mode"] == "compile":
                r = check_compile(p, job["root"], job["kind"])
            else:
                r = check_start(p, job["root"], job["kind"], job["seeds"], job.get("device", "cpu"))
            r["ok"] = True
        except BaseException as e:  # report and go on with the next problem
            r = {"ok": False, "error": f"{type(e).__name__}: {e}",
                 "trace": traceback.format_exc()[-3000:]}
        results[p["name"]] = r
        print(p["name"], "ok" if r["ok"] else r["error"], file=sys.stderr, flush=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()

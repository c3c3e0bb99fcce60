# One candidate of build_cpu.sh: the build step (kevolve._prepare) and its own load_inline calls, compile-only.
# usage: build_cpu_one.py WORKER_PY CACHE CANDIDATE REFERENCE -> one JSON line: prepare s/CPU, build s/CPU, builds, errors
import os, sys, time, resource, json
pyroot, cache, cand, ref = sys.argv[1:5]
os.environ["KEVOLVE_CACHE_DIR"] = cache
os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(cache, "torch_extensions")
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
sys.path.insert(0, pyroot)
from kevolve import _prepare, _inline
import torch
import torch.utils.cpp_extension as ext
def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN); return r.ru_utime + r.ru_stime
code = open(cand).read()
_inline.patch_load_inline()
built, errs = [], []
real = ext.load_inline
def counting(*a, **k):
    t = time.time()
    try:
        m = real(*a, **k)
        built.append(round(time.time() - t, 1))
        return m
    except Exception as e:
        errs.append(str(e).splitlines()[0][:120])
        raise
ext.load_inline = counting
torch.cuda.is_available = lambda: True  # no GPU here: reach the builds, not the launches
t0, c0 = time.time(), cpu()
p = _prepare.prepare({"candidate": code})
t1, c1 = time.time(), cpu()
err = None
try:
    g = {"__name__": "cand"}
    exec(compile(code, cand, "exec"), g)
    r = {"__name__": "ref"}
    exec(compile(open(ref).read(), ref, "exec"), r)
    init = (g.get("get_init_inputs") or r["get_init_inputs"])()
    m = g["ModelNew"](*init)
    if not built and not errs:
        m(*(g.get("get_inputs") or r["get_inputs"])())
except BaseException as e:
    err = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120] if str(e) else "")
t2, c2 = time.time(), cpu()
print(json.dumps({"cand": os.path.basename(cand), "prep_s": round(t1 - t0, 1), "prep_cpu": round(c1 - c0, 1), "pch_built": p.get("pch_built"),
                  "bind_built": p.get("bindings_built"), "load_s": round(t2 - t1, 1), "load_cpu": round(c2 - c1, 1),
                  "builds": built, "build_errors": errs, "err": err}))

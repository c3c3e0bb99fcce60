"""Runs each candidate's forward a few times under Nsight Compute, for the
side-by-side benchmark (harness/bench_kernelbench_test.go).

usage: ncu --profile-from-start off ... python ncu_forward.py JOBS.json REPS

Only the timed region is profiled (cudaProfilerStart/Stop). Before every
forward a marker kernel, kv_ncu_marker, is launched with grid (job+1, rep+1),
so the report can be split into per-forward groups of kernels without
knowing how many kernels a candidate launches. Compilation (Triton JIT,
load_inline builds, which come from the caches the evaluator filled) and a
warm-up forward happen before profiling starts.
"""
import gc
import importlib.util
import json
import sys

import torch
from kevolve import load_cuda

MARKER = load_cuda('extern "C" __global__ void kv_ncu_marker(int tag) { }')


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def to_cuda(x):
    return x.cuda() if isinstance(x, torch.Tensor) else x


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    reps = int(sys.argv[2])
    try:
        import kevolve
        kevolve.patch_load_inline()  # the evaluator's load_inline builds, by source hash
    except Exception as e:  # noqa: BLE001
        print("no load_inline cache:", e, file=sys.stderr)
    for i, job in enumerate(jobs):
        try:
            ref = load(job["reference"], "kv_ref_%d" % i)
            cand = load(job["candidate"], "kv_cand_%d" % i)
            torch.manual_seed(42)
            init = [to_cuda(x) for x in ref.get_init_inputs()]
            torch.manual_seed(42)
            model = cand.ModelNew(*init).cuda().eval()
            torch.manual_seed(43)
            inputs = [to_cuda(x) for x in ref.get_inputs()]
            with torch.no_grad():
                for _ in range(2):
                    model(*inputs)
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                for r in range(reps):
                    MARKER.kv_ncu_marker(i, grid=(i + 1, r + 1), block=(1,))
                    model(*inputs)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            print(json.dumps({"job": i, "key": job["key"], "ok": True}), flush=True)
        except Exception as e:  # noqa: BLE001 - one job's failure is reported, the rest go on
            try:
                torch.cuda.profiler.stop()
            except Exception:  # noqa: BLE001
                pass
            print(json.dumps({"job": i, "key": job["key"], "ok": False, "error": "%s: %s" % (type(e).__name__, e)}), flush=True)
        model = inputs = None
        gc.collect()
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

# kevolve trace: count the work of a KernelBench-format reference.
#
# Usage: python trace.py REF.py [--device meta|cpu]
# Prints one JSON object on the last stdout line:
#   {"flops", "bytes", "dtype", "device", "ops": [{"op","calls","flops","method"}],
#    "bytes_detail": [{"op","bytes","method"}]}
#
# FLOPs: matmul/bmm/conv/attention through the formulas of
# torch.utils.flop_counter (exact, e.g. 2*M*N*K); every other aten op by
# output elements x a per-op cost (COST below), reductions by input elements.
# Bytes: the fewest that must move: each tensor input, parameter and buffer
# read once (only its distinct gathered rows when gathers alone read it),
# each output written once, at their own dtypes.
import argparse
import importlib.util
import json
import os
import sys

import torch

# The counting core lives in the worker's Python (workcount.py), written
# beside this script by harness/sol, so the evaluation child counts the same way.
from workcount import Attention, Counter, summarize


def load(path):
    spec = importlib.util.spec_from_file_location("kevolve_ref", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kevolve_ref"] = mod
    spec.loader.exec_module(mod)
    return mod


def trace(mod, device):
    torch.manual_seed(0)
    with torch.device(device):
        init = mod.get_init_inputs() if hasattr(mod, "get_init_inputs") else []
        model = mod.Model(*init)
        inputs = mod.get_inputs()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    model = model.to(device).eval()
    c = Counter()
    with torch.no_grad(), Attention(c), c:
        out = model(*inputs)
    return summarize(c, inputs, model, out, device)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref")
    ap.add_argument("--device", default="auto", choices=["auto", "meta", "cpu"])
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    mod = load(a.ref)
    devices = ["meta", "cpu"] if a.device == "auto" else [a.device]
    errs = []
    for d in devices:
        try:
            res = trace(mod, d)
            if errs:
                res["note"] = "meta tracing failed (%s); traced on cpu" % errs[-1]
            print(json.dumps(res))
            return 0
        except Exception as e:  # a reference that cannot run on meta is retried on CPU
            errs.append("%s: %s" % (type(e).__name__, e))
    print(json.dumps({"error": "; ".join(errs)}))
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""Diagnostic (GPU): runs only the stream-work check and the device-filling
spin of the evaluation child on the hostile side-stream candidates, with no
audits in the way, and prints what each sees. Run from the repository root:

    python harness/testdata/hostile/stream_check_demo.py
"""
import importlib.util
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "worker", "py"))

import torch  # noqa: E402

from evaluate.guards.integrity import InputRefresher, stream_work_check  # noqa: E402
from evaluate.timing import Timer  # noqa: E402


def load(name, modname):
    spec = importlib.util.spec_from_file_location(modname, os.path.join(HERE, name))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def main():
    dev = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = False
    cases = [("gpu_ref_matmul_relu.py", "gpu_side_stream_mm.py"), ("gpu_ref_matmul_relu.py", "gpu_side_stream_mm_honest.py"),
             ("gpu_ref_scale.py", "gpu_thread_launch.py"), ("gpu_ref_scale.py", "gpu_triton_side_stream.py"),
             ("gpu_ref_scale.py", "gpu_graph_side_stream.py"), ("gpu_ref_scale.py", "gpu_kernel_honest.py")]
    timer = Timer(dev, 256 << 20)
    print("spin:", timer.spin.note, flush=True)
    for ref_file, cand_file in cases:
        ref = load(ref_file, "r_" + ref_file[:-3])
        cand = load(cand_file, "c_" + cand_file[:-3])

        def make_inputs(s):
            torch.manual_seed(s)
            with torch.device(dev):
                return ref.get_inputs()
        with torch.device(dev):
            rm = ref.Model().eval()
            cm = cand.ModelNew().eval()
        cin = make_inputs(1)
        rin = make_inputs(2)

        def cand_fn():
            with torch.no_grad():
                return cm(*cin)

        def ref_fn():
            with torch.no_grad():
                return rm(*rin)

        def ref_call(x):
            with torch.no_grad():
                y = rm(*x)
            torch.cuda.synchronize()
            return y
        for _ in range(3):
            cand_fn()
        torch.cuda.synchronize()
        t0 = time.time()
        try:
            ok, detail, kind = stream_work_check(cand_fn, ref_fn, InputRefresher(make_inputs, cin, random.Random(3)), ref_call, None, dev)
        except Exception as e:  # noqa: BLE001
            ok, detail, kind = False, repr(e), "error"
        st = timer.bench(cand_fn, 1.0)
        print("%-32s stream check ok=%s kind=%s (%.2f s): %s | timed median %.1f us" % (
            cand_file, ok, kind, time.time() - t0, detail[:260], st["median_s"] * 1e6), flush=True)


if __name__ == "__main__":
    main()

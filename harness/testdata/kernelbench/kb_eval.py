"""Runs KernelBench's own eval_kernel_against_ref on a list of jobs, for the
side-by-side benchmark (harness/bench_kernelbench_test.go).

usage: kb_eval.py JOBS.json RESULTS.jsonl

KernelBench is imported unmodified from env KB_SRC (its src/ folder). Its
package __init__ imports LLM client libraries (openai, litellm) that an
evaluation never calls; where they are not installed, empty stand-ins are
registered so the import succeeds. Extra wheels unpacked by the prepare script
(pydantic, requests, ...) are appended to sys.path from env KB_SITE, so the
machine's own packages win where present.

One JSON line per job goes to RESULTS (KernelBench prints to stdout itself).
The first line is {"event": "import", ...} with the import time.
"""
import json
import os
import sys
import time
import types

T0 = time.perf_counter()


def stub_missing(name, attrs):
    try:
        __import__(name)
    except ImportError:
        m = types.ModuleType(name)
        for a in attrs:
            def unavailable(*args, _a=a, **kwargs):
                raise RuntimeError("%s.%s is a stand-in: the benchmark never queries an LLM" % (name, _a))
            setattr(m, a, unavailable)
        sys.modules[name] = m
        return True
    return False


def main():
    jobs_path, out_path = sys.argv[1], sys.argv[2]
    with open(jobs_path) as f:
        jobs = json.load(f)
    out = open(out_path, "a", buffering=1)

    def emit(d):
        out.write(json.dumps(d) + "\n")
        out.flush()

    site = os.environ.get("KB_SITE")
    if site and os.path.isdir(site):
        sys.path.append(site)
    sys.path.insert(0, os.environ["KB_SRC"])
    t = time.perf_counter()
    import torch  # noqa: F401
    torch_s = time.perf_counter() - t
    stubbed = [n for n, a in (("openai", ["OpenAI"]), ("litellm", ["completion"])) if stub_missing(n, a)]
    from kernelbench.eval import eval_kernel_against_ref
    emit({"event": "import", "import_s": time.perf_counter() - T0, "torch_import_s": torch_s, "stubbed": stubbed})

    for job in jobs:
        with open(job["reference"]) as f:
            ref_src = f.read()
        with open(job["candidate"]) as f:
            cand_src = f.read()
        rec = {"key": job["key"]}
        t = time.perf_counter()
        try:
            r = eval_kernel_against_ref(
                ref_src, cand_src, seed_num=42, num_correct_trials=5, num_perf_trials=100,
                measure_performance=True, verbose=False, backend=job["backend"],
                device=torch.device("cuda", 0), precision=torch.float32)
            rec["wall_s"] = time.perf_counter() - t
            if r is None:
                rec["error"] = "eval_kernel_against_ref returned None (lock-file retry)"
            else:
                rec.update(compiled=r.compiled, correctness=r.correctness,
                           runtime_ms=r.runtime, runtime_stats=r.runtime_stats,
                           ref_runtime_ms=r.ref_runtime, ref_runtime_stats=r.ref_runtime_stats,
                           metadata={k: str(v)[:1500] for k, v in (r.metadata or {}).items()})
        except Exception as e:  # noqa: BLE001 - a job's failure is a result
            rec["wall_s"] = time.perf_counter() - t
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
        emit(rec)
    out.close()


if __name__ == "__main__":
    main()

"""Compile one @triton.jit kernel for a CUDA target (sm_XX) or an AMD one
(gfx90a, gfx942, gfx950: Triton's HIP backend, in the same wheel) without a
GPU and report the result as JSON on stdout (read by harness/compile).
Input: JSON on stdin.
Written by kevolve-mcp; runs in the harness's Python."""

import importlib.util
import inspect
import json
import os
import sys
import time
import traceback


def diag_from_traceback(tb, path):
    out = []
    for fr in traceback.extract_tb(tb):
        if os.path.abspath(fr.filename) == os.path.abspath(path):
            out.append(fr.lineno)
    return out[-1] if out else 0


def main():
    req = json.load(sys.stdin)
    path = req["source_path"]
    res = {"ok": False, "diagnostics": [], "log": ""}

    def fail(msg, line=0, col=0, severity="error", log=""):
        res["diagnostics"].append({"file": os.path.basename(path), "line": line, "col": col,
                                   "severity": severity, "message": msg})
        res["log"] = log or msg
        print(json.dumps(res))
        sys.exit(0)

    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from triton.runtime.jit import JITFunction
    except Exception as e:  # noqa: BLE001
        res["status"] = "unavailable"
        fail(f"triton is not importable in {sys.executable}: {e}")

    try:
        spec = importlib.util.spec_from_file_location("kevolve_triton_kernel", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        fail(f"SyntaxError: {e.msg}", e.lineno or 0, e.offset or 0, log=traceback.format_exc(limit=-1))
    except Exception as e:  # noqa: BLE001
        fail(f"{type(e).__name__}: {e}", diag_from_traceback(e.__traceback__, path), log=traceback.format_exc())

    def unwrap(obj):
        seen = 0
        while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
            obj, seen = obj.fn, seen + 1
        return obj if isinstance(obj, JITFunction) else None

    jits = {}
    for name, obj in vars(mod).items():
        fn = unwrap(obj)
        if fn is not None and getattr(fn, "__module__", mod.__name__) == mod.__name__:
            jits[name] = fn
    if not jits:
        fail("no @triton.jit function found in the source")
    want = req.get("kernel") or ""
    if want:
        if want not in jits:
            fail(f"no @triton.jit function named {want!r}; found {sorted(jits)}")
        fn = jits[want]
    else:
        # The last one defined is usually the entry point that calls helpers.
        want = max(jits, key=lambda n: getattr(jits[n], "starting_line_number", 0) or 0)
        fn = jits[want]

    user_sig = req.get("signature") or {}
    consts = dict(req.get("constants") or {})
    sig, guessed = {}, []
    for p in inspect.signature(fn.fn).parameters.values():
        ann = p.annotation
        is_constexpr = ann is not inspect.Parameter.empty and "constexpr" in str(ann)
        if p.name in user_sig:
            sig[p.name] = user_sig[p.name]
        elif is_constexpr or p.name in consts:
            sig[p.name] = "constexpr"
        elif "ptr" in p.name.lower():
            sig[p.name] = "*fp32"
            guessed.append(p.name)
        else:
            sig[p.name] = "i32"
            guessed.append(p.name)
        if sig[p.name] == "constexpr" and p.name not in consts:
            if p.default is not inspect.Parameter.empty:
                consts[p.name] = p.default
            else:
                fail(f"constexpr parameter {p.name!r} needs a value: pass it in constants")
    res["kernel"] = want
    res["signature"] = sig
    if guessed:
        res["note"] = ("guessed types for " + ", ".join(f"{n}: {sig[n]}" for n in guessed) +
                       " (pass signature to set them)")

    cc = int(req.get("cc") or 90)
    amd_arch = req.get("amd_arch") or ""
    target = GPUTarget("hip", amd_arch, int(req.get("warp_size") or 64)) if amd_arch else GPUTarget("cuda", cc, 32)
    opts = {}
    if req.get("num_warps"):
        opts["num_warps"] = int(req["num_warps"])
    if req.get("num_stages"):
        opts["num_stages"] = int(req["num_stages"])
    t0 = time.perf_counter()
    # Triton's runtime specializes on 16-divisibility: torch allocations are
    # always 16-byte aligned, integers only when the caller says so.
    div16 = set(req.get("divisible16") or [])
    attrs = {}
    for i, (name, ty) in enumerate(sig.items()):
        if (ty.startswith("*") or name in div16) and ty != "constexpr":
            attrs[(i,)] = [["tt.divisibility", 16]]
    try:
        src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
        ck = triton.compile(src, target=target, options=opts)
    except Exception as e:  # noqa: BLE001
        line, col = 0, 0
        node = getattr(e, "node", None)
        start = 0
        try:
            # Triton numbers lines from the 'def' (decorators stripped).
            lines, first = inspect.getsourcelines(fn.fn)
            start = first + next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("def "))
        except (OSError, TypeError, StopIteration):
            start = getattr(fn, "starting_line_number", 0) or 0
        if node is not None and getattr(node, "lineno", None):
            line = start + node.lineno - 1 if start else node.lineno
            col = (getattr(node, "col_offset", 0) or 0) + 1
        else:
            line = diag_from_traceback(e.__traceback__, path)
        msg = str(e).strip().splitlines()
        text = msg[-1] if msg else type(e).__name__
        if "ptxas" in str(e).lower() and "not found" in str(e).lower():
            res["status"] = "unavailable"
        fail(f"{type(e).__name__}: {text}", line, col, log=str(e)[-6000:])
    res["compile_seconds"] = time.perf_counter() - t0
    out = req.get("out_dir") or "."
    md = ck.metadata
    if amd_arch:
        with open(os.path.join(out, "kernel.hsaco"), "wb") as f:
            f.write(ck.asm["hsaco"])
        with open(os.path.join(out, "kernel.amdgcn"), "w") as f:
            f.write(ck.asm["amdgcn"])
        res.update(ok=True, name=md.name, num_warps=md.num_warps, shared=md.shared)
        print(json.dumps(res))
        return
    with open(os.path.join(out, "kernel.cubin"), "wb") as f:
        f.write(ck.asm["cubin"])
    with open(os.path.join(out, "kernel.ptx"), "w") as f:
        f.write(ck.asm["ptx"])
    res.update(ok=True, name=md.name, num_warps=md.num_warps, shared=md.shared,
               ptxas=os.environ.get("TRITON_PTXAS_PATH") or os.path.join(
                   os.path.dirname(triton.backends.nvidia.__file__), "bin", "ptxas"))
    print(json.dumps(res))


if __name__ == "__main__":
    main()

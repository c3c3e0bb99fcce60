"""nvcc with its host and device front ends run side by side.

For one .cu compiled for one GPU arch, nvcc runs two independent chains one
after the other: host (preprocess, cudafe++) and device (preprocess, cicc,
ptxas, fatbinary), then the host compiler over cudafe++'s output with the
fatbinary embedded. The only link between the chains is the module id that
cudafe++ generates and cicc reads. Written up front and read by both, the
chains run at the same time; with torch headers each front end takes 7-8 s,
so a load_inline build's CUDA unit finishes in about two thirds of the time.

torch.utils.cpp_extension runs this as its nvcc (PYTORCH_NVCC). Anything
other than that one shape (several archs, relocatable device code, no -c,
preprocess-only, ...) and any surprise in nvcc's plan goes to the real nvcc
unchanged, as does a failure that does not come from the source.

Usage: python _nvcc.py NVCC_ARGS... (the real nvcc from KEVOLVE_REAL_NVCC).
Standard library only: it starts once per CUDA unit.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile

# Arguments that change nvcc's plan in ways this runner does not reproduce.
_UNSUPPORTED = {
    "-E", "-M", "-MM", "--preprocess", "--generate-dependencies", "-ptx", "--ptx", "-cubin", "--cubin",
    "-fatbin", "--fatbin", "-dc", "--device-c", "-dw", "--device-w", "-rdc=true", "--relocatable-device-code=true",
    "-dlink", "--device-link", "-lib", "--lib", "-link", "--link", "-run", "--run", "--dryrun", "-dryrun",
    "-keep", "--keep", "-save-temps", "--save-temps", "-time", "--time", "-v", "--verbose", "-x", "--x",
}
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_TOOL_ORDER = ["gcc-E", "cudafe++", "gcc-E", "cicc", "ptxas", "fatbinary", "rm", "gcc-c"]


def _trace(msg: str) -> None:
    if os.environ.get("KEVOLVE_NVCC_TRACE"):
        print(f"kevolve-nvcc: {msg}", file=sys.stderr)


def _real_nvcc() -> str:
    if os.environ.get("KEVOLVE_REAL_NVCC"):
        return os.environ["KEVOLVE_REAL_NVCC"]
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return os.path.join(home, "bin", "nvcc")


def _split_depfile(argv: list[str]) -> tuple[list[str], str | None]:
    """Drops -MD -MF FILE (nvcc writes that file in an internal step that has
    no command line) and returns the file to write ourselves."""
    out, dep, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if a == "-MD":
            i += 1
            continue
        if a == "-MF" and i + 1 < len(argv):
            dep = argv[i + 1]
            i += 2
            continue
        out.append(a)
        i += 1
    return out, dep


def _eligible(argv: list[str]) -> tuple[str, str] | None:
    """(source, object) when this is `nvcc ... -c one.cu -o one.o`."""
    if any(a in _UNSUPPORTED or a.startswith(("-rdc", "--relocatable", "-arch=all", "--gpu-architecture=all")) for a in argv):
        return None
    if "-c" not in argv and "--compile" not in argv:
        return None
    srcs = [a for a in argv if a.endswith(".cu") and not a.startswith("-")]
    if len(srcs) != 1 or "-o" not in argv:
        return None
    i = argv.index("-o")
    return (srcs[0], argv[i + 1]) if i + 1 < len(argv) else None


def _kind(cmd: str) -> str:
    words = shlex.split(cmd)
    if not words:
        return "?"
    tool = os.path.basename(words[0].replace('"', ""))
    if tool == "gcc" or tool.endswith(("g++", "c++", "gcc", "clang", "clang++")):
        return "gcc-E" if "-E" in words else "gcc-c" if "-c" in words else "gcc?"
    return tool


def _plan(real: str, argv: list[str], tmp: str) -> tuple[dict, list[str]] | None:
    """nvcc's own plan for these arguments (its --dryrun), when it has the
    two-chain shape this runner knows."""
    env = dict(os.environ, TMPDIR=tmp)
    r = subprocess.run([real, "--dryrun", *argv], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None
    cmds = []
    for line in (r.stdout + r.stderr).splitlines():
        if not line.startswith("#$ "):
            continue
        body = line[3:]
        m = _ASSIGN.match(body)
        if m and not cmds:
            try:
                env[m.group(1)] = " ".join(shlex.split(m.group(2)))
            except ValueError:
                env[m.group(1)] = m.group(2).strip()
            continue
        cmds.append(body)
    kinds = [_kind(c) for c in cmds]
    if kinds != _TOOL_ORDER or "--gen_module_id_file" not in cmds[1] or "--module_id_file_name" not in cmds[3]:
        _trace(f"unexpected plan {kinds}")
        return None
    return env, cmds


def _module_id(src: str, obj: str) -> str:
    # The shape nvcc uses: _<hash>_<len>_<mangled file name>_<hash>.
    base = re.sub(r"[^A-Za-z0-9]", "_", os.path.basename(src))
    h = hashlib.sha256((os.path.abspath(src) + "\0" + os.path.abspath(obj)).encode()).hexdigest()
    return f"_{h[:8]}_{len(base)}_{base}_{h[8:16]}"


def _run_parallel(env: dict, cmds: list[str], src: str, obj: str) -> tuple[int, str]:
    m = re.search(r'--module_id_file_name\s+"?([^"\s]+)"?', cmds[1])
    if not m:
        return -1, "no module id file in the plan"
    with open(m.group(1), "w") as f:
        f.write(_module_id(src, obj))
    host = cmds[0] + " && " + cmds[1].replace("--gen_module_id_file", "")
    device = " && ".join(cmds[2:6])
    procs = [subprocess.Popen(["bash", "-c", c], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in (host, device)]
    outs = [p.communicate()[0] for p in procs]
    log = "".join(outs)
    rc = next((p.returncode for p in procs if p.returncode), 0)
    if rc:
        return rc, log
    r = subprocess.run(["bash", "-c", cmds[7]], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, log + r.stdout


def main(argv: list[str]) -> int:
    real = _real_nvcc()
    args, depfile = _split_depfile(argv)
    io = _eligible(args)
    if io is None:
        _trace("not a single-arch -c compile: real nvcc")
        os.execv(real, [real, *argv])
    src, obj = io
    with tempfile.TemporaryDirectory(prefix="kevolve-nvcc-") as tmp:
        plan = _plan(real, args, tmp)
        if plan is not None:
            rc, log = _run_parallel(*plan, src, obj)
    if plan is None:
        os.execv(real, [real, *argv])
    if rc == 0:
        if depfile:
            with open(depfile, "w") as f:
                f.write(f"{obj}: {src}\n")
        sys.stdout.write(log)
        _trace("host and device front ends ran side by side")
        return 0
    if os.path.basename(src) in log:
        sys.stdout.write(log)  # the source's own errors, as nvcc prints them
        return rc
    _trace(f"side-by-side run failed (rc {rc}); real nvcc")
    os.execv(real, [real, *argv])
    return rc  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

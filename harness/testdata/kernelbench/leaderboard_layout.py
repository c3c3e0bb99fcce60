"""Lays out KernelBench-leaderboard solutions (anneouyang/KernelBenchLeaderboard:
one correct solution file per model and problem, with the problem files they
were judged against) as a kernelbench run set: DEST/kb/KernelBench/level{N}/
{problem}.py and DEST/candidates/level{N}/{problem}.py. Issue 34's throughput
set: third-party kernels that build, where issue 22's CUDA-L1 set mostly
cannot.

Per problem of the levels asked, the fastest listed solution that builds its
own kernel (load_inline, or a Triton @jit) is taken. With --only FILE (one
solution hash a line, '#' comments), only those are laid out: the committed
list of the ones that build under torch 2.11 (leaderboard_set.txt).

usage: leaderboard_layout.py MIRROR COMMIT DEST [--levels 1,2] [--only FILE]
"""
import argparse
import json
import os
import re
import subprocess
import sys

_KEY = re.compile(r"^Level (\d+): ((\d+)_.+)$")


def _show(mirror, commit, path):
    return subprocess.run(["git", "-C", mirror, "show", "%s:%s" % (commit, path)],
                          check=True, capture_output=True, text=True).stdout


def _own_kernel(code):
    return "load_inline" in code or "@triton.jit" in code


def _wanted(path):
    if not path:
        return None
    with open(path) as f:
        return {ln.split()[0] for ln in f if ln.strip() and not ln.startswith("#")}


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mirror")
    ap.add_argument("commit")
    ap.add_argument("dest")
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--only")
    a = ap.parse_args()
    levels = {int(x) for x in a.levels.split(",")}
    only = _wanted(a.only)
    board = json.loads(_show(a.mirror, a.commit, "docs/assets/data.json"))
    rows = []
    for key, entries in board.items():
        m = _KEY.match(key)
        if not m or int(m.group(1)) not in levels:
            continue
        level, problem, task = int(m.group(1)), m.group(2), int(m.group(3))
        for e in sorted(entries, key=lambda e: -(e.get("torch_speedup") or 0)):
            if only is not None and e["file"] not in only:
                continue
            code = _show(a.mirror, a.commit, "docs/assets/solutions/%s.py" % e["file"])
            if not _own_kernel(code):
                continue
            ref = _show(a.mirror, a.commit, "docs/assets/problems/l%d_p%d.py" % (level, task))
            _write(os.path.join(a.dest, "kb", "KernelBench", "level%d" % level, problem + ".py"), ref)
            _write(os.path.join(a.dest, "candidates", "level%d" % level, problem + ".py"), code)
            rows.append((level, task, problem, e["file"], e["display_name"], e.get("torch_speedup") or 0))
            break
    rows.sort()
    with open(os.path.join(a.dest, "set.tsv"), "w") as f:
        for r in rows:
            f.write("%d\t%d\t%s\t%s\t%s\t%.3f\n" % r)
    if only is not None and len(rows) != len(only):
        sys.exit("leaderboard_layout: %d of the %d listed solutions found" % (len(rows), len(only)))
    print("leaderboard_layout: %d solutions" % len(rows))


if __name__ == "__main__":
    main()

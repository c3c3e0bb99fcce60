"""Lays out every CUDA-L1 kernel of one published file that builds a torch
extension with load_inline (levels 1 and 2) as a kernelbench run candidate
folder: DEST/candidates/level{N}/{problem file}. Issue 22's throughput set:
third-party load_inline candidates none of which the harness built before.

usage: throughput_layout.py MIRROR COMMIT PATH DEST
(PATH: JSON lines with level_id, task_id, custom_code; DEST/kb holds the
KernelBench problems the kernels were written for.)
"""
import json
import os
import subprocess
import sys


def main():
    mirror, commit, path, dest = sys.argv[1:5]
    text = subprocess.run(["git", "-C", mirror, "show", "%s:%s" % (commit, path)],
                          check=True, capture_output=True, text=True).stdout
    n = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        level, task, code = rec["level_id"], rec["task_id"], rec.get("custom_code") or ""
        if level not in (1, 2) or "load_inline" not in code:
            continue
        folder = os.path.join(dest, "kb", "KernelBench", "level%d" % level)
        names = [f for f in os.listdir(folder) if f.startswith("%d_" % task) and f.endswith(".py")]
        if len(names) != 1:
            sys.exit("throughput_layout: level %d task %d: %d problem files" % (level, task, len(names)))
        out = os.path.join(dest, "candidates", "level%d" % level, names[0])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(code)
        n += 1
    print("throughput_layout: %d load_inline candidates" % n)


if __name__ == "__main__":
    main()

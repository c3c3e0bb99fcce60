"""Writes each pair of regress.tsv's candidate into DEST/candidates.

usage: regress_layout.py TABLE DEST OWNER/REPO=MIRROR...

A source is OWNER/REPO@COMMIT:PATH#level=L,task=T, read with `git show`
from the repository's local mirror. PATH is a JSON-lines file of records
with level_id, task_id and custom_code (CUDA-L1's published kernels).
The problem file named in the table must exist in DEST/kb at the
KernelBench commit, or the pair is an error: a table row never silently
drops out of the set.
"""
import json
import os
import subprocess
import sys


def rows(table):
    with open(table) as f:
        head = None
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if head is None:
                head = cols
                continue
            yield dict(zip(head, cols))


def parse(source):
    repo, rest = source.split("@", 1)
    commit, rest = rest.split(":", 1)
    path, frag = rest.split("#", 1)
    keys = dict(kv.split("=") for kv in frag.split(","))
    return repo, commit, path, int(keys["level"]), int(keys["task"])


def main():
    table, dest = sys.argv[1], sys.argv[2]
    mirrors = dict(a.split("=", 1) for a in sys.argv[3:])
    files = {}
    n = 0
    for r in rows(table):
        repo, commit, path, level, task = parse(r["source"])
        key = (repo, commit, path)
        if key not in files:
            text = subprocess.run(["git", "-C", mirrors[repo], "show", "%s:%s" % (commit, path)],
                                  check=True, capture_output=True, text=True).stdout
            recs = {}
            for line in text.splitlines():
                if line.strip():
                    rec = json.loads(line)
                    recs[(rec["level_id"], rec["task_id"])] = rec.get("custom_code") or ""
            files[key] = recs
        code = files[key].get((level, task), "")
        if not code.strip():
            sys.exit("regress_layout: %s has no code for level %d task %d" % (r["source"], level, task))
        problem = os.path.join(dest, "kb", "KernelBench", r["problem"])
        if not os.path.exists(problem):
            sys.exit("regress_layout: %s: no problem %s at the KernelBench commit" % (r["id"], r["problem"]))
        out = os.path.join(dest, "candidates", r["problem"])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(code)
        n += 1
    print("regress_layout: %d candidates" % n)


if __name__ == "__main__":
    main()

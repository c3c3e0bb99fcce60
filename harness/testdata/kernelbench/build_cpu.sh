#!/usr/bin/env bash
# The host's CPU for the load_inline builds of the throughput set
# (throughput_prep.sh), compile-only, under two versions of the worker's
# Python side: side by side, per candidate, with the same outcome or not.
# Needs no GPU: nvcc and the CUDA headers may come from the pip CUDA wheels
# (CUDA_HOME pointing at a folder with bin/, include/, nvvm/ and lib/ where
# libcudart.so exists); torch.cuda.is_available is forced true in the
# candidate's process so its own code reaches load_inline, and a kernel
# launch fails after the build, which is all that is measured.
#
# usage: build_cpu.sh SET OLD_REV OUT [EVERY]   (run from the repository)
#   SET: a throughput set (candidates/, kb/KernelBench/); OLD_REV: the git
#   revision to compare the working tree with; EVERY: take every Nth
#   candidate (default 4).
set -uo pipefail
set_dir=${1:?usage: build_cpu.sh SET OLD_REV OUT [EVERY]}
old_rev=${2:?}
out=${3:?}
every=${4:-4}
py=${KEVOLVE_PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
old=$(mktemp -d)
git archive "$old_rev" harness/worker/py | tar -x -C "$old"
(cd "$set_dir/candidates" && ls */*.py) | awk "NR % $every == 1" > "$out/list.txt"
for side in old new; do
  root=$([ $side = old ] && echo "$old/harness/worker/py" || echo "$here/../../worker/py")
  cache=$(mktemp -d)
  while read -r f; do
    timeout 900 "$py" "$here/build_cpu_one.py" "$root" "$cache" "$set_dir/candidates/$f" "$set_dir/kb/KernelBench/$f" 2>/dev/null | tail -1
  done < "$out/list.txt" > "$out/$side.jsonl"
done
"$py" - "$out/old.jsonl" "$out/new.jsonl" <<'PY' | tee "$out/build_cpu.md"
import json, sys
old = {json.loads(l)["cand"]: json.loads(l) for l in open(sys.argv[1]) if l.strip()}
new = {json.loads(l)["cand"]: json.loads(l) for l in open(sys.argv[2]) if l.strip()}
fail = lambda r: "fail" if (r["build_errors"] or r["err"]) else "ok"
print("| candidate | old CPU s | new CPU s | old | new |\n|---|---|---|---|---|")
to = tn = po = pn = same = 0
for c in old:
    a, b = old[c], new.get(c)
    if b is None:
        continue
    print("| %s | %.1f | %.1f | %s | %s |" % (c[:-3], a["load_cpu"], b["load_cpu"], fail(a), fail(b)))
    to += a["load_cpu"]; tn += b["load_cpu"]; po += a["prep_cpu"]; pn += b["prep_cpu"]; same += fail(a) == fail(b)
print("\nbuild CPU: old %.1f s, new %.1f s (%.2fx); build step (PCHs, bindings): old %.1f s, new %.1f s; same outcome %d/%d"
      % (to, tn, to / max(tn, 1e-9), po, pn, same, len(old)))
PY

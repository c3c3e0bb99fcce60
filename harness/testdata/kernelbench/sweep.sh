#!/usr/bin/env bash
# The reference-as-candidate sweep of KernelBench levels 1-3 on a GPU
# machine: every problem file, renamed Model->ModelNew, must come back
# integrity_violation (reference_ops), with no tool error. Writes to OUT:
#   kb-sweep.jsonl          one record per problem
#   kb-sweep-summary.json   fast_p, verdict counts, tool errors, wall time,
#                           peak host memory (kevolve-mcp, largest worker process)
#   kb-sweep.txt            the summary as printed, plus the peak GPU memory
#   kb-sweep.log            progress and the harness's log
# It stops itself (SIGINT: the partial summary is still written) before
# LIMIT_S, 530 s by default, so it ends within a 9-minute device slot.
#
# usage: sweep.sh BIN KB_DIR OUT   (env: KEVOLVE_PYTHON, JOBS=2, LEVELS=1,2,3,
#        LIMIT_S=530, TIMEOUT_S=120 per evaluation, TARGET=nvidia)
set -uo pipefail
bin=${1:?usage: sweep.sh BIN KB_DIR OUT}
kb=${2:?usage: sweep.sh BIN KB_DIR OUT}
out=${3:?usage: sweep.sh BIN KB_DIR OUT}
py=${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3}
mkdir -p "$out"
db=$(mktemp -d)/sweep.db  # a fresh database: every pair is evaluated

mem_pid=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$out/gpu-mem.csv" 2>/dev/null &
  mem_pid=$!
fi
t0=$(date +%s)
timeout -s INT -k 20 "${LIMIT_S:-530}" "$bin" --python "$py" --db "$db" --log-level warn \
  kernelbench run --kb "$kb" --level "${LEVELS:-1,2,3}" --reference-as-candidate --target "${TARGET:-nvidia}" \
  --jobs "${JOBS:-2}" --timeout "${TIMEOUT_S:-120}" \
  --jsonl "$out/kb-sweep.jsonl" --summary "$out/kb-sweep-summary.json" > "$out/kb-sweep.txt" 2> "$out/kb-sweep.log"
rc=$?
[ -n "$mem_pid" ] && kill "$mem_pid" 2>/dev/null
{
  echo "sweep wall $(( $(date +%s) - t0 )) s, exit status $rc"
  if [ -s "$out/gpu-mem.csv" ]; then
    echo "peak GPU memory used (nvidia-smi, every 0.5 s): $(sort -n "$out/gpu-mem.csv" | tail -1) MiB"
  fi
} >> "$out/kb-sweep.txt"
cat "$out/kb-sweep.txt"
# Every verdict that is not integrity_violation via reference_ops, for the reader.
"$py" - "$out/kb-sweep.jsonl" <<'PY' || true
import json, sys
bad = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("tool_error") or r.get("verdict") != "integrity_violation" or "reference_ops" not in (r.get("failed_checks") or []):
        bad.append("%s: %s %s" % (r["problem"], r.get("verdict") or "TOOL ERROR", (r.get("tool_error") or ",".join(r.get("failed_checks") or []))[:200]))
print("not integrity_violation via reference_ops: %d" % len(bad))
for b in bad:
    print("  " + b)
PY
exit $rc

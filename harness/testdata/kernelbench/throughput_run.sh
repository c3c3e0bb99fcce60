#!/usr/bin/env bash
# Evaluates the throughput set (throughput_prep.sh) on the GPU machine the
# way a new user would: a fresh database, empty build caches (the extension
# cache and the precompiled headers included), kernelbench run's default
# jobs. Prints evaluations a minute over the command's wall time, and writes
# the results to OUT (throughput.jsonl, throughput.txt, throughput.log).
#
# RERUN=1 sweeps the set a second time on the same database and caches with
# --rerun (OUT/rerun): what a later sweep of the same set costs.
#
# usage: throughput_run.sh BIN SET OUT   (env: KEVOLVE_PYTHON, LIMIT_S=540, LOG_LEVEL=warn, RERUN)
set -uo pipefail
bin=${1:?usage: throughput_run.sh BIN SET OUT}
set_dir=${2:?}
out=${3:?}
py=${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3}
fresh=$(mktemp -d)
levels=$(ls "$set_dir/candidates" | sed -n 's/^level//p' | paste -sd, -)

# sweep OUT FLAGS...: one kernelbench run of the set, timed over the command's wall.
sweep() {
  local o=$1; shift
  mkdir -p "$o"
  local t0 t1 rc n
  t0=$(date +%s.%N)
  KEVOLVE_CACHE_DIR=$fresh/cache TORCH_EXTENSIONS_DIR=$fresh/torch_ext timeout -s INT -k 20 "${LIMIT_S:-540}" \
    "$bin" --python "$py" --db "$fresh/k.db" --log-level "${LOG_LEVEL:-warn}" \
    kernelbench run --kb "$set_dir/kb" --level "$levels" --candidates "$set_dir/candidates" --target nvidia --timeout 300 \
    --jsonl "$o/throughput.jsonl" "$@" > "$o/throughput.txt" 2> "$o/throughput.log"
  rc=$?
  t1=$(date +%s.%N)
  n=$(grep -c . "$o/throughput.jsonl" 2>/dev/null || echo 0)
  python3 - "$n" "$t0" "$t1" "$rc" <<'PY' | tee -a "$o/throughput.txt"
import sys
n, t0, t1, rc = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
wall = t1 - t0
print("throughput: %d evaluations in %.1f s = %.1f a minute (exit %s)" % (n, wall, 60 * n / wall if wall else 0, rc))
PY
}

sweep "$out"
[ -z "${RERUN:-}" ] || sweep "$out/rerun" --rerun

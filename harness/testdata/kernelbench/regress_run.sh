#!/usr/bin/env bash
# Evaluates the real-kernel regression set (laid out by regress_prep.sh) on
# the GPU machine with `kernelbench run` and compares the verdicts with the
# committed table. The results database is kept in SET, so running it again
# resumes where a slot's time limit stopped it. Writes to OUT:
#   regress.jsonl, regress-summary.json, regress.txt (kernelbench's summary),
#   regress.log, regress-compare.txt (one line per pair and the agreement)
#
# usage: regress_run.sh BIN SET OUT   (env: KEVOLVE_PYTHON, JOBS=8,
#        LIMIT_S=520, TIMEOUT_S=300 per evaluation, TARGET=nvidia)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: regress_run.sh BIN SET OUT}
set_dir=${2:?usage: regress_run.sh BIN SET OUT}
out=${3:?usage: regress_run.sh BIN SET OUT}
py=${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3}
mkdir -p "$out"
timeout -s INT -k 20 "${LIMIT_S:-520}" "$bin" --python "$py" --db "$set_dir/regress.db" --log-level warn \
  kernelbench run --kb "$set_dir/kb" --level 1,2 --candidates "$set_dir/candidates" --target "${TARGET:-nvidia}" \
  --jobs "${JOBS:-8}" --timeout "${TIMEOUT_S:-300}" --tolerance kernelbench-v0 \
  --jsonl "$out/regress.jsonl" --summary "$out/regress-summary.json" > "$out/regress.txt" 2> "$out/regress.log"
echo "kernelbench run exit status $?" >> "$out/regress.txt"
# The labels are the repository's: a set laid out earlier keeps the copy it
# was made from, which a later relabel does not reach (79/84 "agreed" with
# a stale copy where the committed table gave 84/84).
python3 "$here/regress_compare.py" "$here/regress.tsv" "$out/regress.jsonl" | tee "$out/regress-compare.txt"

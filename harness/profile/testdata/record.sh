#!/usr/bin/env bash
# Record real Nsight Compute output for the parser tests, on the GPU box.
# Run from the repository root:  harness/profile/testdata/record.sh OUTDIR
# For each case it profiles the candidate's forward the way profile.runNCU
# does (clock control off, full set, only kernels between the driver's
# cudaProfilerStart/Stop) and exports the raw and details pages as CSV.
# Copy OUTDIR/*/raw.csv into harness/profile/testdata/ncu/<case>_raw.csv.
set -euo pipefail
PY=${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3}
NCU=${NCU:-ncu}
OUT=${1:-/tmp/kevolve-ncu-record}
D=harness/profile/testdata/gpu
DRIVER=harness/profile/driver.py
mkdir -p "$OUT"
"$NCU" --version > "$OUT/ncu_version.txt" 2>&1 || true
for c in uncoalesced:ref_transpose.py:cand_transpose_naive.py \
         coalesced:ref_copy.py:cand_copy.py \
         regheavy:ref_poly.py:cand_regheavy.py; do
  IFS=: read -r name ref cand <<< "$c"
  mkdir -p "$OUT/$name"
  t0=$(date +%s.%N)
  "$NCU" --clock-control none --set full --profile-from-start off --launch-count 5 \
    --target-processes all -f -o "$OUT/$name/report" \
    "$PY" "$DRIVER" ncu --ref "$D/$ref" --candidate "$D/$cand" > "$OUT/$name/ncu.log" 2>&1 || echo "ncu failed for $name (see ncu.log)"
  t1=$(date +%s.%N)
  echo "$name profile wall_s $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" | tee -a "$OUT/timings.txt"
  if [ -f "$OUT/$name/report.ncu-rep" ]; then
    "$NCU" --import "$OUT/$name/report.ncu-rep" --csv --page raw > "$OUT/$name/raw.csv"
    "$NCU" --import "$OUT/$name/report.ncu-rep" --csv --page details > "$OUT/$name/details.csv"
    rm -f "$OUT/$name/report.ncu-rep"
  fi
done

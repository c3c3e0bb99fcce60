#!/usr/bin/env bash
# Lays out the real-kernel regression set (regress.tsv) in DEST, an ignored
# folder: KernelBench's level-1/2 problems at commit c6c4ab6 (the set the
# published kernels were written for) in DEST/kb, and each labelled pair's
# candidate, read from its source repository at the commit the table names,
# in DEST/candidates/level{N}/{problem file}. Nothing here is committed:
# the third-party code comes from local mirrors fetched at test time.
#
# usage: regress_prep.sh DEST [KB_MIRROR] [CUDAL1_MIRROR]
#        (defaults: the fetched mirrors under /work/.mirror)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: regress_prep.sh DEST [KB_MIRROR] [CUDAL1_MIRROR]}
kb=${2:-${KB_MIRROR:-/work/.mirror/ScalingIntelligence+KernelBench/repo}}
cudal1=${3:-${CUDAL1_MIRROR:-/work/.mirror/deepreinforce-ai+CUDA-L1/repo}}
kb_commit=c6c4ab6e6c803d7ffa9005c3265a859e87cffbdf
for m in "$kb" "$cudal1"; do
  git -C "$m" rev-parse --git-dir >/dev/null 2>&1 || { echo "regress_prep: $m is not a git mirror (fetch it first)" >&2; exit 2; }
done
rm -rf "$dest"
mkdir -p "$dest/kb" "$dest/candidates"
git -C "$kb" archive "$kb_commit" KernelBench/level1 KernelBench/level2 | tar -x -C "$dest/kb"
echo "$kb_commit" > "$dest/kb/COMMIT"
python3 "$here/regress_layout.py" "$here/regress.tsv" "$dest" "deepreinforce-ai/CUDA-L1=$cudal1"
cp "$here/regress.tsv" "$dest/regress.tsv"
echo "regression set: $(find "$dest/candidates" -name '*.py' | wc -l) candidates, KernelBench $kb_commit, in $dest ($(du -sh "$dest" | cut -f1))"

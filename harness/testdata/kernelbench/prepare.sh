#!/usr/bin/env bash
# Copies what the side-by-side benchmark needs from a KernelBench checkout
# (or a bare git mirror of one) into DEST, which must be an ignored folder:
# KernelBench's code and problems are never committed. Also unpacks the few
# pure-Python/manylinux wheels its eval module imports (Python 3.12, x86_64),
# because the GPU machine has no network.
#
# usage: prepare.sh DEST [KERNELBENCH_DIR]   (default $KB_MIRROR, else the
#        fetched mirror /work/.mirror/ScalingIntelligence+KernelBench/repo)
# env:   PYTHON  interpreter with pip, for the download (default python3)
set -euo pipefail
dest=${1:?usage: prepare.sh DEST [KERNELBENCH_DIR]}
src=${2:-${KB_MIRROR:-/work/.mirror/ScalingIntelligence+KernelBench/repo}}
py=${PYTHON:-python3}

rm -rf "$dest"
mkdir -p "$dest"
if [ -f "$src/src/kernelbench/eval.py" ]; then
  cp -r "$src/src" "$dest/src"
  mkdir -p "$dest/KernelBench"
  cp -r "$src/KernelBench/level1" "$src/KernelBench/level2" "$src/KernelBench/level3" "$dest/KernelBench/"
  (git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown) > "$dest/COMMIT"
else
  git -C "$src" archive HEAD src KernelBench/level1 KernelBench/level2 KernelBench/level3 | tar -x -C "$dest"
  git -C "$src" rev-parse HEAD > "$dest/COMMIT"
fi

# What kernelbench.eval imports beyond torch and numpy (openai and litellm
# are stood in for by the driver: only LLM queries use them).
"$py" -m pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version 3.12 --platform manylinux2014_x86_64 \
  -d "$dest/wheels" pydantic requests python-dotenv tqdm
mkdir -p "$dest/site"
"$py" - "$dest/wheels" "$dest/site" <<'PY'
import glob, os, sys, zipfile
for w in sorted(glob.glob(os.path.join(sys.argv[1], "*.whl"))):
    zipfile.ZipFile(w).extractall(sys.argv[2])
PY
rm -rf "$dest/wheels"
echo "KernelBench $(cat "$dest/COMMIT") in $dest ($(du -sh "$dest" | cut -f1))"

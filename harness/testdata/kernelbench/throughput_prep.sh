#!/usr/bin/env bash
# Issue 22's throughput set: every load_inline kernel of CUDA-L1's published
# H100 file (levels 1-2) beside KernelBench's problems at c6c4ab6, laid out
# from local mirrors into an ignored folder (third-party code is never
# committed). On the GPU machine, throughput_run.sh evaluates them with empty
# caches and a fresh database.
#
# usage: throughput_prep.sh DEST [KB_MIRROR] [CUDAL1_MIRROR]
#
# SET=leaderboard lays out issue 34's set instead: the KernelBench-leaderboard
# solutions listed in leaderboard_set.txt (they build under torch 2.11) beside
# the problem files they were judged against, from LEADERBOARD_MIRROR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: throughput_prep.sh DEST [KB_MIRROR] [CUDAL1_MIRROR]}
kb=${2:-${KB_MIRROR:-/work/.mirror/ScalingIntelligence+KernelBench/repo}}
cudal1=${3:-${CUDAL1_MIRROR:-/work/.mirror/deepreinforce-ai+CUDA-L1/repo}}
kb_commit=c6c4ab6e6c803d7ffa9005c3265a859e87cffbdf
cudal1_commit=51e8356bf844101cab2aeeca4bdff47ebb1953b8
rm -rf "$dest"
if [ "${SET:-cudal1}" = leaderboard ]; then
  lb=${LEADERBOARD_MIRROR:-/work/.mirror/anneouyang+KernelBenchLeaderboard/repo}
  exec python3 "$here/leaderboard_layout.py" "$lb" 170ca7965f53bba599d1078b6fcaa5dd2658ec50 "$dest" \
    --levels 1 --only "$here/leaderboard_set.txt"
fi
mkdir -p "$dest/kb"
git -C "$kb" archive "$kb_commit" KernelBench/level1 KernelBench/level2 | tar -x -C "$dest/kb"
python3 "$here/throughput_layout.py" "$cudal1" "$cudal1_commit" optimized_cuda_code/h100.json "$dest"

#!/usr/bin/env bash
# ncu on the backward kernels at d128 N8k (the pair, then the one-kernel
# backward): speed of light, warp stalls, the hottest SASS lines. Reports,
# details and per-instruction CSVs go to $OUT.
# Carry .gpu-jit (see backward.sh).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1)
ln -sf "$(basename "$real")" .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu
export ATTNGEN_CACHE_DIR=$(mktemp -d)
python3 gpu/profile_backward.py 128 8192 >/dev/null   # compile outside ncu
for spec in "0 dkdv" "0 dq" "1 fused"; do
  set -- $spec
  ATTNGEN_FUSED_BACKWARD=$1 timeout 240 ncu --kernel-name regex:attn_bwd_$2 --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy \
    --section SourceCounters --export $OUT/bwd-$2 \
    python3 gpu/profile_backward.py 128 8192 > $OUT/ncu-$2.txt 2>&1
  echo "== $2 rc=$?"
  ncu --import $OUT/bwd-$2.ncu-rep --page details > $OUT/details-$2.txt 2>&1
  ncu --import $OUT/bwd-$2.ncu-rep --page source --csv --print-source sass > $OUT/sass-$2.csv 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|highest-utilized" \
    $OUT/details-$2.txt | head -8
done
# The stall reasons and the hottest instructions of each kernel.
python3 gpu/sass_stalls.py $OUT/sass-*.csv

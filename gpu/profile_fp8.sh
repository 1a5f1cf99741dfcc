#!/usr/bin/env bash
# ncu on the FP8 forward beside bf16 at d128 N8k: speed of light, warp
# stalls, the hottest SASS lines. Reports and per-instruction CSVs go to $OUT.
# Carry .gpu-jit (see fp8.sh).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1)
ln -sf "$(basename "$real")" .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu
export ATTNGEN_CACHE_DIR=$(mktemp -d)
for dtype in e4m3 bf16; do
  python3 gpu/profile_fp8.py $dtype ${D:-128} 8192   # compile outside ncu
  timeout 240 ncu --kernel-name regex:attn_fwd --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section SourceCounters \
    --export $OUT/fwd-$dtype python3 gpu/profile_fp8.py $dtype ${D:-128} 8192 > $OUT/ncu-$dtype.txt 2>&1
  echo "== $dtype rc=$?"
  ncu --import $OUT/fwd-$dtype.ncu-rep --page details > $OUT/details-$dtype.txt 2>&1
  ncu --import $OUT/fwd-$dtype.ncu-rep --page source --csv --print-source sass > $OUT/sass-$dtype.csv 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Executed Ipc A|highest-utilized|Pipe" \
    $OUT/details-$dtype.txt | head -12
done
python3 gpu/sass_stalls.py $OUT/sass-e4m3.csv $OUT/sass-bf16.csv

#!/usr/bin/env bash
# ncu on attngen and SDPA's cuDNN backend at short and long sequences (bf16,
# B*N 16k, H*D 2048): duration, SM and tensor-pipe use, issue and stall
# statistics of each kernel, to explain where attngen trails cuDNN at
# N = 512 and 1k (issue 21). Carry .gpu-jit; reports go to $OUT.
#   bash gpu/profile_short.sh ["128:512 128:8192 256:512"]
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1)
ln -sf "$(basename "$real")" .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu
export ATTNGEN_CACHE_DIR=$(mktemp -d)
for shape in ${1:-128:512 128:8192 256:512}; do
  d=${shape%%:*}; n=${shape##*:}
  for which in attngen cudnn; do
    tag=$which-d$d-n$n
    python3 gpu/profile_short.py $which $d $n > /dev/null 2>&1  # compile outside ncu
    timeout 200 ncu --clock-control none --profile-from-start off \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section LaunchStats --section Occupancy \
      --export $OUT/$tag python3 gpu/profile_short.py $which $d $n > $OUT/ncu-$tag.txt 2>&1
    echo "== $tag rc=$?"
    ncu --import $OUT/$tag.ncu-rep --page details > $OUT/details-$tag.txt 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|Tensor|Block Size" \
      $OUT/details-$tag.txt | head -24
  done
done

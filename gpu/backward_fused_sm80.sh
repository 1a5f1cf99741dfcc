#!/usr/bin/env bash
# sm_80's one-kernel backward (ATTNGEN_ARCH=sm_80 ATTNGEN_FUSED_BACKWARD=1)
# on the GPU machine in one call: gradients at d64 and d128 beside the
# deterministic pair, memcheck, racecheck (dS^T is written to shared memory
# and read by every warp) and synccheck, autograd, and the bench (one-kernel
# vs the pair vs SDPA's flash and cuDNN). Carry .gpu-jit (see backward.sh).
set -uo pipefail
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1); ln -sf $(basename $real) .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu ATTNGEN_CACHE_DIR=$(mktemp -d)
export ATTNGEN_ARCH=sm_80 ATTNGEN_FUSED_BACKWARD=1
echo "== correctness d64,d128 (one-kernel default + det pair), sm_80 kernels"
timeout 240 python3 gpu/backward_check.py --only correct --head-dims 64,128 > $OUT/correct.log 2>&1
echo "rc=$?"; grep -E "FAIL|correctness:|Error|error" $OUT/correct.log | head -20
for tool in memcheck racecheck synccheck; do
  echo "== $tool"
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd_ \
    python3 gpu/backward_check.py --only correct --head-dims 64,128 --cases 3 > $OUT/san-$tool.log 2>&1
  echo "rc=$?"; grep -E "SUMMARY|FAIL" $OUT/san-$tool.log | tail -3
done
echo "== autograd"
timeout 150 python3 gpu/backward_check.py --only autograd 2>&1 | tail -6
echo "== bench (sm_80 kernels on this GPU)"
timeout 240 python3 gpu/backward_check.py --only bench --bench-dims 64,128 --json $OUT/bench.json 2>&1 | tail -20

#!/usr/bin/env bash
# sm_80's one-kernel backward (ATTNGEN_ARCH=sm_80 ATTNGEN_FUSED_BACKWARD=1)
# on the GPU machine: gradients at d64 and d128 beside the deterministic
# pair, packed (varlen) batches through attention_varlen_backward,
# memcheck, racecheck (dS^T is written to shared memory and read by every
# warp) and synccheck, autograd, the bench (one-kernel vs the pair vs
# SDPA's flash and cuDNN) and the tile variants (4 or 8 warps). Carry
# .gpu-jit (see backward.sh). STEPS picks the parts (default all: about 10
# minutes; split it over two calls: STEPS="correct sanitize" then
# STEPS="autograd bench variants").
set -uo pipefail
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
STEPS=${STEPS:-"correct sanitize autograd bench variants"}
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1); ln -sf $(basename $real) .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu ATTNGEN_CACHE_DIR=$(mktemp -d)
export ATTNGEN_ARCH=sm_80 ATTNGEN_FUSED_BACKWARD=1
step() { [[ " $STEPS " == *" $1 "* ]]; }
status=0
check() { local rc=$?; echo "rc=$rc"; [ $rc -eq 0 ] || status=1; }
if step correct; then
  echo "== correctness d64,d128 (one-kernel default + det pair), sm_80 kernels"
  timeout 240 python3 gpu/backward_check.py --only correct --head-dims 64,128 > $OUT/correct.log 2>&1
  check; grep -E "FAIL|correctness:|Error|error" $OUT/correct.log | head -20
  echo "== varlen (attention_varlen_backward, deterministic=False: the one-kernel backward)"
  timeout 240 python3 gpu/backward_check.py --only varlen > $OUT/varlen.log 2>&1
  check; grep -E "FAIL|varlen:|Error|error" $OUT/varlen.log | head -20
fi
if step sanitize; then
  for tool in memcheck racecheck synccheck; do
    echo "== $tool"
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd_fused \
      python3 gpu/backward_check.py --only correct --head-dims 64,128 --cases 3 > $OUT/san-$tool.log 2>&1
    check; grep -E "SUMMARY|FAIL" $OUT/san-$tool.log | tail -3
    echo "== $tool, packed batches"
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd_fused \
      python3 gpu/backward_check.py --only varlen --cases 3 > $OUT/san-varlen-$tool.log 2>&1
    check; grep -E "SUMMARY|FAIL" $OUT/san-varlen-$tool.log | tail -3
  done
fi
if step autograd; then
  echo "== autograd"
  timeout 150 python3 gpu/backward_check.py --only autograd > $OUT/autograd.log 2>&1
  check; tail -6 $OUT/autograd.log
fi
if step bench; then
  echo "== bench (sm_80 kernels on this GPU)"
  timeout 240 python3 gpu/backward_check.py --only bench --bench-dims 64,128 --json $OUT/bench.json 2>&1 | tail -20
fi
if step variants; then
  echo "== tile variants (sm_80 kernels)"
  timeout 240 python3 gpu/sm80_fused_variants.py 2>&1 | tail -8
fi
exit $status

#!/usr/bin/env bash
# The one-kernel backward (ATTNGEN_FUSED_BACKWARD=1) on the GPU machine in
# one call: gradients at d64 and d128 beside the deterministic pair,
# memcheck and synccheck, determinism and autograd, the d64 step variant and
# the bench (fused vs the pair vs SDPA). Carry .gpu-jit (see backward.sh).
set -uo pipefail
OUT=${OUT:-/tmp/attngen-out}; mkdir -p "$OUT"
real=$(ls .gpu-jit/prefix/lib/libattngen.so.*.*.* | head -1); ln -sf $(basename $real) .gpu-jit/prefix/lib/libattngen.so
export ATTNGEN_LIBRARY=$PWD/.gpu-jit/prefix/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu ATTNGEN_CACHE_DIR=$(mktemp -d) ATTNGEN_FUSED_BACKWARD=1
echo "== correctness d64,d128 (fused default + det)"
timeout 200 python3 gpu/backward_check.py --only correct --head-dims 64,128 2>&1 | grep -E "FAIL|correctness:|Error|error" | head -20
for tool in memcheck synccheck; do
  echo "== $tool"
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_bwd_ \
    python3 gpu/backward_check.py --only correct --head-dims 64,128 --cases 3 > $OUT/san-$tool.log 2>&1
  echo "rc=$?"; grep -E "SUMMARY|FAIL" $OUT/san-$tool.log | tail -3
done
echo "== determinism + autograd"
timeout 120 python3 gpu/backward_check.py --only determinism 2>&1 | tail -4
timeout 150 python3 gpu/backward_check.py --only autograd 2>&1 | tail -6
echo "== step variant"
timeout 100 python3 gpu/fused_step_variant.py 2>&1 | tail -4
echo "== bench"
timeout 200 python3 gpu/backward_check.py --only bench --json $OUT/bench.json 2>&1 | tail -14

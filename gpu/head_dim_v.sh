#!/usr/bin/env bash
# A value head dim of its own (head_dim_v) on the GPU machine, one call:
# compute-sanitizer on small ragged cases, then gpu/head_dim_v_check.py
# (correctness over random ragged cases through attention, attention_varlen
# and flash_attn_func, and decoding cases through the KV-cache kernels;
# speed beside V padded to Q's head dim and cuDNN) on sm_90a, and its
# correctness on the sm_80 kernels.
#
# Here:  bash scripts/build-self-contained.sh
#        cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu-jit): bash gpu/head_dim_v.sh [.gpu-jit/prefix] [--no-bench]
# With $OUT set, JSON results and logs go there. Exit status 0 when all passed.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
PREFIX=$(readlink -f "${1:-.gpu-jit/prefix}")
shift || true
OUT=${OUT:-/tmp/attngen-out}
mkdir -p "$OUT"
real=$(ls "$PREFIX"/lib/libattngen.so.*.*.* | head -n 1)
for link in libattngen.so libattngen.so.0.1; do
  [ -e "$PREFIX/lib/$link" ] || ln -sf "$(basename "$real")" "$PREFIX/lib/$link"
done
export ATTNGEN_LIBRARY=$PREFIX/lib/libattngen.so PYTHONPATH=$PWD/python:$PWD/gpu
export ATTNGEN_CACHE_DIR=$(mktemp -d /tmp/attngen-cache-XXXXXX)
status=0
fail() { echo "FAILED: $*"; status=1; }

echo "== sanitizers on small ragged cases (memcheck, racecheck, synccheck)"
# racecheck stops on varlen kernels with an internal sanitizer error
# (gpu/backward.sh says more): it runs the dense cases only.
for tool in memcheck racecheck synccheck; do
  only="--kv-cases 4"; [ $tool = racecheck ] && only="--dense-only --kv-cases 0"
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_ \
    python3 gpu/head_dim_v_check.py --no-bench --cases 6 $only > "$OUT/hdv-sanitize-$tool.log" 2>&1
  rc=$?
  { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool (rc $rc)"
  grep -E "SUMMARY" "$OUT/hdv-sanitize-$tool.log" | tail -n 1
done

echo "== head_dim_v_check sm_80 kernels"
ATTNGEN_ARCH=sm_80 timeout 300 python3 gpu/head_dim_v_check.py --no-bench --cases 50 \
  > "$OUT/hdv-sm80.log" 2>&1 || fail "head_dim_v_check sm_80"
grep -E "^FAIL|^head_dim_v" "$OUT/hdv-sm80.log" | head -n 6
echo "== head_dim_v_check sm_90a"
timeout 420 python3 gpu/head_dim_v_check.py --json "$OUT/head_dim_v.json" "$@" \
  > "$OUT/hdv.log" 2>&1 || fail "head_dim_v_check sm_90a"
grep -E "^FAIL" "$OUT/hdv.log" | head -n 5
tail -n 14 "$OUT/hdv.log"
exit $status

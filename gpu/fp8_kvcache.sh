#!/usr/bin/env bash
# FP8 KV-cache decoding on the GPU machine, one call: compute-sanitizer on
# small ragged cases, then gpu/fp8_kvcache_check.py (correctness over random
# ragged cases against the dequantized float32 reference, the sm_80 refusal,
# and the speed beside attngen bf16 and cuDNN).
#
# Here:  bash scripts/build-self-contained.sh
#        cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu-jit): bash gpu/fp8_kvcache.sh [.gpu-jit/prefix] [check options]
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
for tool in memcheck racecheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_ \
    python3 gpu/fp8_kvcache_check.py --no-bench --cases 4 > "$OUT/fp8kv-sanitize-$tool.log" 2>&1
  rc=$?
  { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool (rc $rc)"
  grep -E "SUMMARY" "$OUT/fp8kv-sanitize-$tool.log" | tail -n 1
done

echo "== fp8_kvcache_check"
timeout 420 python3 gpu/fp8_kvcache_check.py --json "$OUT/fp8_kvcache.json" "$@" \
  > "$OUT/fp8kv.log" 2>&1 || fail "fp8_kvcache_check"
grep -E "^FAIL" "$OUT/fp8kv.log" | head -n 5
tail -n 20 "$OUT/fp8kv.log"
exit $status

#!/usr/bin/env bash
# The FP8 (e4m3) forward on sm_90a on the GPU machine, one call:
# compute-sanitizer (memcheck, synccheck) on four small ragged cases (and
# two varlen ones, gpu/fp8_varlen_check.py --sanitize), then
# gpu/fp8_check.py: correctness over random ragged cases against the
# dequantized inputs, the refusal under ATTNGEN_ARCH=sm_80, FA3's accuracy
# table, speed beside attngen bf16, cuDNN and the FP8 GEMM ceiling.
#
# Here:  bash scripts/build-self-contained.sh
#        cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu-jit): bash gpu/fp8.sh [.gpu-jit/prefix] [fp8_check.py flags:
#        --no-bench, --cases N, --first I, --seed S]
# FP8_SANITIZE=0 skips the sanitizers. With $OUT set, the JSON results and
# logs go there. Exit status 0 when all passed.
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.." || exit 2
PREFIX=.gpu-jit/prefix
# The prefix is optional: a first argument that is a flag goes to the check.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then PREFIX=$1; shift; fi
PREFIX=$(readlink -f "$PREFIX")
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

if [ "${FP8_SANITIZE:-1}" != 0 ]; then
  echo "== sanitizers on tiny ragged FP8 cases (memcheck, synccheck)"
  # Exit status 9 is the sanitizer's (a numeric miss is fp8_check's own 1,
  # which the full run below reports).
  for tool in memcheck synccheck; do
    timeout 180 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_ \
      python3 gpu/fp8_check.py --sanitize > "$OUT/fp8-sanitize-$tool.log" 2>&1
    rc=$?
    { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool (rc $rc)"
    grep -E "SUMMARY|^fp8 correctness" "$OUT/fp8-sanitize-$tool.log" | tail -n 2
    timeout 180 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_ \
      python3 gpu/fp8_varlen_check.py --sanitize > "$OUT/fp8-varlen-sanitize-$tool.log" 2>&1
    rc=$?
    { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool, varlen (rc $rc)"
    grep -E "SUMMARY|^fp8 varlen correctness" "$OUT/fp8-varlen-sanitize-$tool.log" | tail -n 2
  done
fi

echo "== fp8_check sm_90a"
timeout 420 python3 gpu/fp8_check.py --json "$OUT/fp8.json" "$@" > "$OUT/fp8.log" 2>&1 ||
  fail "fp8_check (rc $?; log $OUT/fp8.log)"
grep -E "^FAIL" "$OUT/fp8.log" | head -n 8
# The summary and the tables: everything from the correctness line on.
sed -n '/^fp8 correctness:/,$p' "$OUT/fp8.log"
tail -n 3 "$OUT/fp8.log" | grep -E "Error|Traceback" && echo "(the run stopped: see $OUT/fp8.log)"
exit $status

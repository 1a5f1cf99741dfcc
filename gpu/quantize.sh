#!/usr/bin/env bash
# attngen.quantize_fp8 on sm_90a on the GPU machine, one call:
# compute-sanitizer (memcheck, synccheck) on five small ragged cases, then
# gpu/quantize_check.py: its outputs (descales, every element, v K-major and
# zero-padded) against a float64 reference over random ragged cases, FP8
# attention on them, the refusal under ATTNGEN_ARCH=sm_80, FA3's accuracy
# table with block quantization and the Hadamard transform, and the kernel's
# bandwidth against HBM and a torch copy. About 4 minutes on an H200.
#
# Here:  bash scripts/build-self-contained.sh
#        cmake --install build-self-contained --prefix .gpu-jit/prefix --strip
# There (carry .gpu-jit): bash gpu/quantize.sh [.gpu-jit/prefix] [quantize_check.py
#        flags: --no-bench, --cases N, --first I, --seed S]
# QUANTIZE_SANITIZE=0 skips the sanitizers. With $OUT set, the JSON results
# and logs go there. Exit status 0 when all passed (the accuracy and bandwidth
# bars are reported in the summary, not judged).
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
# One cache for the sanitizer runs and the check: the kernels compile once.
ATTNGEN_CACHE_DIR=$(mktemp -d /tmp/attngen-cache-XXXXXX)
export ATTNGEN_CACHE_DIR
status=0
fail() { echo "FAILED: $*"; status=1; }

if [ "${QUANTIZE_SANITIZE:-1}" != 0 ]; then
  echo "== sanitizers on tiny ragged quantize_fp8 cases (memcheck, synccheck)"
  # attn_ matches the quantize kernels (attn_quantize_e4m3_*) and the FP8
  # attention ones. Exit status 9 is the sanitizer's (a numeric miss is
  # quantize_check's own 1, which the full run below reports).
  for tool in memcheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_ \
      python3 gpu/quantize_check.py --sanitize > "$OUT/quantize-sanitize-$tool.log" 2>&1
    rc=$?
    { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool (rc $rc)"
    grep -E "SUMMARY|^quantize correctness" "$OUT/quantize-sanitize-$tool.log" | tail -n 2
  done
fi

echo "== quantize_check sm_90a"
timeout 330 python3 gpu/quantize_check.py --json "$OUT/quantize.json" "$@" \
  > "$OUT/quantize.log" 2>&1 || fail "quantize_check (rc $?; log $OUT/quantize.log)"
grep -E "^FAIL" "$OUT/quantize.log" | head -n 8
# The summary and the tables: everything from the correctness line on.
sed -n '/^quantize correctness:/,$p' "$OUT/quantize.log"
tail -n 3 "$OUT/quantize.log" | grep -E "Error|Traceback" && echo "(the run stopped: see $OUT/quantize.log)"
exit $status

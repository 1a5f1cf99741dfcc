#!/usr/bin/env bash
# ALiBi on the GPU machine, one call: compute-sanitizer on small ragged cases,
# then gpu/alibi_check.py (correctness over random ragged cases through
# attention, attention_varlen and flash_attn_func; speed beside the plain
# kernel and SDPA with the bias as a mask) on sm_90a, and its correctness on
# the sm_80 kernels. Needs ATTNGEN_LIBRARY and PYTHONPATH=python:gpu; OUT is
# where the logs go. Exit status 0 when everything passed.
set -u
OUT=${OUT:-/tmp/alibi}
mkdir -p "$OUT"
status=0
fail() { echo "FAILED: $*"; status=1; }

echo "== sanitizers on small ragged ALiBi cases (memcheck, racecheck, synccheck)"
for tool in memcheck racecheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=alibi \
    python3 gpu/alibi_check.py --no-bench --cases 6 --kvcache-cases 6 --dense-only \
    > "$OUT/sanitize-$tool.log" 2>&1
  rc=$?
  { [ $rc = 9 ] || [ $rc = 124 ]; } && fail "compute-sanitizer $tool (rc $rc)"
  grep -E "SUMMARY" "$OUT/sanitize-$tool.log" | tail -n 1
done

echo "== alibi_check sm_90a"
timeout 420 python3 gpu/alibi_check.py --json "$OUT/alibi.json" "$@" > "$OUT/alibi.log" 2>&1 ||
  fail "alibi_check sm_90a"
grep -E "^FAIL" "$OUT/alibi.log" | head -n 5
echo "== alibi_check sm_80 kernels"
ATTNGEN_ARCH=sm_80 timeout 240 python3 gpu/alibi_check.py --no-bench --cases 40 \
  > "$OUT/alibi-sm80.log" 2>&1 || fail "alibi_check sm_80"
grep -E "^FAIL|^ALiBi" "$OUT/alibi-sm80.log" | head -n 5
tail -n 16 "$OUT/alibi.log"
exit $status

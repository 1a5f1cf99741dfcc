#!/usr/bin/env bash
# A varlen batch over a paged KV cache on the GPU machine, one call:
# compute-sanitizer (memcheck, racecheck, synccheck) on small ragged cases,
# gpu/paged_varlen_check.py on sm_90a (correctness, then speed against the
# same keys packed and torch's flash varlen), its correctness on the sm_80
# kernels, and gpu/varlen_check.py --quick on the packed kernels (they share
# attn-tile's varlen program). Needs ATTNGEN_LIBRARY and
# PYTHONPATH=python:gpu; OUT is where the logs go. Exit status 0 when
# everything passed.
set -u
OUT=${OUT:-/tmp/paged-varlen}
mkdir -p "$OUT"
status=0
fail() { echo "FAILED: $*"; status=1; }

echo "== sanitizers on small ragged paged cases"
for tool in memcheck racecheck synccheck; do
  timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=attn_fwd_ \
    python3 gpu/paged_varlen_check.py --sanitize > "$OUT/sanitize-$tool.log" 2>&1
  rc=$?
  [ $rc = 0 ] || fail "compute-sanitizer $tool (rc $rc)"
  grep -E "SUMMARY|passed" "$OUT/sanitize-$tool.log" | tail -n 2
done

echo "== paged_varlen_check sm_90a"
timeout 480 python3 gpu/paged_varlen_check.py --json "$OUT/paged-varlen.json" "$@" \
  > "$OUT/paged.log" 2>&1 || fail "paged_varlen_check sm_90a"
grep -E "^FAIL" "$OUT/paged.log" | head -n 8
echo "== paged_varlen_check sm_80 kernels"
ATTNGEN_ARCH=sm_80 timeout 300 python3 gpu/paged_varlen_check.py --no-bench --cases 30 \
  > "$OUT/paged-sm80.log" 2>&1 || fail "paged_varlen_check sm_80"
grep -E "^FAIL|correctness" "$OUT/paged-sm80.log" | head -n 8
echo "== varlen_check --quick (packed kernels)"
timeout 420 python3 gpu/varlen_check.py --quick --no-bench > "$OUT/varlen.log" 2>&1 ||
  fail "varlen_check"
grep -E "^FAIL" "$OUT/varlen.log" | head -n 5
tail -n 3 "$OUT/varlen.log"
tail -n 12 "$OUT/paged.log"
exit $status
